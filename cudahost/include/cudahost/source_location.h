// cudahost::source_location: the caller's file and line as a defaulted argument, for the emulated intrinsics that
// report a fault at the kernel's line. std::source_location's subset that cudahost uses, built on __builtin_FILE and
// __builtin_LINE, which GCC and clang have (clang before 15 cannot build libstdc++'s <source_location>).
#ifndef CUDAHOST_SOURCE_LOCATION_H
#define CUDAHOST_SOURCE_LOCATION_H

namespace cudahost {

struct source_location {
    const char *file_ = "";
    unsigned line_ = 0;
    static constexpr source_location current(const char *file = __builtin_FILE(),
                                             unsigned line = __builtin_LINE())
    {
        return source_location{ file, line };
    }
    constexpr const char *file_name() const { return file_; }
    constexpr unsigned line() const { return line_; }
};

} // namespace cudahost

#endif // CUDAHOST_SOURCE_LOCATION_H
