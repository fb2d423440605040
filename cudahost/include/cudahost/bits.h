// cudahost::bit_cast: the one way cudahost reinterprets a value's bits as another type of the same size (the float
// <-> integer intrinsics, bf16 and tf32 conversions, atomics' compare-and-swap on the integer representation, the PTX
// and tensor-core emulation). __builtin_bit_cast where both types are trivially copyable (a constant expression,
// and the form compilers optimize best); a byte copy otherwise (NVIDIA's host __half and __nv_bfloat16 are not
// trivially copyable). Neither form protects against a compiler that miscompiles the masking that follows a cast:
// that is what the host-compiler probes are for (cudahost/probes/, the workaround flags every build adds).
#ifndef CUDAHOST_BITS_H
#define CUDAHOST_BITS_H

#include <cstring>
#include <type_traits>

namespace cudahost {

template <class To, class From> inline constexpr To bit_cast(const From &v) noexcept
{
    static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
    if constexpr (std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>) {
        return __builtin_bit_cast(To, v);
    } else {
        To r;
        std::memcpy(static_cast<void *>(&r), static_cast<const void *>(&v), sizeof r);
        return r;
    }
}

} // namespace cudahost

#endif // CUDAHOST_BITS_H
