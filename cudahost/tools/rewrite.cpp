// cudahost-rewrite: line-preserving source rewrite of a CUDA .cu file into C++ for host execution mode.
//
//   cudahost-rewrite [-I dir]... [--depfile file] in.cu out.cpp
//
// Rewrites, outside comments and string/character literals:
//   callee<<<grid, block[, smem[, stream]]>>>(args)
//       -> cudahost::launch_(CUDAHOST_KADDR(callee), [&](auto&&... cudahost_a_) { callee(cudahost_a_...); },
//                            "callee", grid, block[, smem[, stream]])(args)
//       (callee may be a kernel, a kernel template's specialization, or any expression naming a kernel: a typed
//       function pointer, a template parameter; a kernel template launched with deduced template arguments has no
//       address at the launch, and gets nullptr)
//   extern __shared__ [__align__(n)|alignas(n)] T name[];
//       -> block scope:      [[maybe_unused]] T* name = cudahost::dyn_smem_ptr<T>();
//          namespace scope:  #define name (::cudahost::dyn_smem_ptr<T>())   (followed by #line)
//   __noinline__ -> __attribute__((noinline))
//   asm [volatile] ("ptx" : outputs : inputs : clobbers);   (inside functions and #define bodies)
//       -> do { ...calls of cudahost's emulation of each PTX instruction... } while (0);   (rewrite_asm.h)
//   k(args) or k<T>(args), where k is a __global__ function declared in this file or in a header it includes
//       (before the call) -> ::cudahost::a_global_function_call_must_be_configured_with_launch_syntax(k)(args): a
//       deleted function, so that calling a kernel like a host function does not compile (as with nvcc: "a
//       __global__ function call must be configured"). Kernels keep their declared type, so a kernel is a value as
//       with nvcc: `void (*f)(float *, int) = k;`, `f<<<g, b>>>(...)`, passed to a template that launches it, to
//       cudaFuncSetAttribute or cudaLaunchKernel. The set of kernel names a file sees depends on that file and its
//       includes only, so a header's rewrite is the same whichever file includes it
//   #include "x.h" / "x.cuh" / <x.cuh> found next to the file or in an -I directory (not the toolkit's or
//       cudahost's) -> #include "<rewritten copy>" (recursively, so kernels and launches in headers work)
//   in a macro definition, a kernel name pasted with ## before <<< is taken whole (name##_kernel<<<...>>>)
// Every rewrite keeps the number of newlines, and the output starts with #line 1 "<absolute path of in.cu>",
// so compiler diagnostics, sanitizer reports, gdb and gcov point at the original lines.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

#include "rewrite_asm.h"
#include "rewrite_lex.h"

namespace {

std::vector<std::string> g_include_dirs;
std::set<std::string> g_deps;
std::set<std::string> g_rewritten; // headers rewritten by this run (each once: include cycles)
// The kernels a file declares (its includes' included): every name, and those of kernel templates.
struct KernelNames {
    std::set<std::string> all, templates;
    void merge(const KernelNames &o)
    {
        all.insert(o.all.begin(), o.all.end());
        templates.insert(o.templates.begin(), o.templates.end());
    }
};
// the kernel names of each rewritten header, for the files that include it
std::map<std::string, KernelNames> g_header_kernels;

struct Fail {
    std::string msg;
};

struct Rewriter {
    std::string path;    // absolute path of the input
    std::string out_dir; // where rewritten headers go
    const std::string &s;
    std::string out;
    // brace stack: true = namespace-like scope (namespace, extern "C"), false = anything else
    std::vector<bool> braces;
    bool in_directive = false;
    // after `__global__`, until the kernel's parameter list (global_params records the kernel's name)
    bool global_pending = false;
    bool global_attr = false; // the next parenthesised group belongs to an attribute (__launch_bounds__(...))
    int global_angle = 0;
    // the __global__ functions declared so far in this file and in the headers it included
    KernelNames kernels;
    bool global_template = false; // the pending __global__ follows a template header (template <...>)

    Rewriter(std::string p, std::string od, const std::string &src)
        : path(std::move(p)), out_dir(std::move(od)), s(src)
    {}

    int line_at(size_t pos) const { return 1 + (int)count_nl(s, 0, pos); }

    [[noreturn]] void fail(size_t pos, const std::string &m)
    {
        throw Fail{ path + ":" + std::to_string(line_at(pos)) + ": cudahost-rewrite: " + m };
    }

    bool at_namespace_scope() const
    {
        for (bool b : braces)
            if (!b) return false;
        return true;
    }

    // The text written to out since the last '{', ';' or '}' (to classify a '{').
    bool brace_is_namespace() const
    {
        size_t k = out.size();
        while (k > 0 && out[k - 1] != ';' && out[k - 1] != '{' && out[k - 1] != '}' && out[k - 1] != ')') k--;
        std::string head = squeeze(out.substr(k));
        if (head.rfind("namespace", 0) == 0 || head.find(" namespace") != std::string::npos) return true;
        if (head.find("extern \"C") != std::string::npos || head.find("extern\"C") != std::string::npos)
            return true;
        return false;
    }

    void launch(size_t &i)
    {
        // i points at "<<<"; the callee is at the end of out.
        size_t e = out.size();
        while (e > 0 && is_space(out[e - 1])) e--;
        size_t b = e;
        for (;;) {
            // optional template argument list
            if (b > 0 && out[b - 1] == '>') {
                int depth = 0, paren = 0;
                size_t k = b;
                while (k > 0) {
                    char c = out[k - 1];
                    if (c == ')')
                        paren++;
                    else if (c == '(')
                        paren--;
                    else if (paren == 0 && c == '>')
                        depth++;
                    else if (paren == 0 && c == '<') {
                        depth--;
                        if (depth == 0) break;
                    }
                    k--;
                }
                if (k == 0)
                    fail(i, "cannot find the start of the template argument list of the launched kernel");
                b = k - 1;
                while (b > 0 && is_space(out[b - 1])) b--;
            }
            size_t id_end = b;
            while (b > 0 && is_ident(out[b - 1])) b--;
            if (b == id_end) fail(i, "cannot find the name of the launched kernel before <<<");
            std::string word = out.substr(b, id_end - b);
            size_t k = b;
            while (k > 0 && is_space(out[k - 1])) k--;
            if (in_directive && k >= 2 && out[k - 1] == '#' && out[k - 2] == '#') {
                // a kernel name pasted in a macro definition: name##_kernel<<<...>>>
                k -= 2;
                while (k > 0 && is_space(out[k - 1])) k--;
                if (k > 0 && is_ident(out[k - 1])) {
                    b = k;
                    continue;
                }
            }
            if (k >= 2 && out[k - 1] == ':' && out[k - 2] == ':') {
                k -= 2;
                while (k > 0 && is_space(out[k - 1])) k--;
                if (k > 0 && (is_ident(out[k - 1]) || out[k - 1] == '>')) {
                    b = k;
                    continue;
                }
                b = k; // leading ::
                break;
            }
            if (word == "template" || (k >= 2 && out[k - 1] == '.') ||
                (k >= 2 && out[k - 1] == '>' && out[k - 2] == '-')) {
                // obj.kernel / ptr->kernel / ns::template kernel: take the member/qualifier too
                if (word == "template") {
                    b = k;
                    continue;
                }
            }
            break;
        }
        std::string callee_raw = out.substr(b, e - b);
        size_t callee_nl = count_nl(out, b, e);
        std::string callee = squeeze(callee_raw);
        if (callee.empty()) fail(i, "empty kernel name before <<<");
        out.resize(b);
        // config up to >>> at depth 0
        size_t j = i + 3, cfg_begin = j;
        int depth = 0;
        size_t cfg_end = std::string::npos;
        while (j < s.size()) {
            size_t k = skip_literal(s, j);
            if (k != j) {
                j = k;
                continue;
            }
            char c = s[j];
            if (c == '(' || c == '[' || c == '{')
                depth++;
            else if (c == ')' || c == ']' || c == '}')
                depth--;
            else if (depth == 0 && c == '>' && s.compare(j, 3, ">>>") == 0) {
                cfg_end = j;
                break;
            }
            j++;
        }
        if (cfg_end == std::string::npos) fail(i, "unterminated <<< launch configuration (no matching >>>)");
        std::string name_lit;
        for (char c : callee) {
            if (c == '"' || c == '\\') name_lit += '\\';
            name_lit += c;
        }
        // The kernel's address, unless it is a kernel template launched without template arguments (they are
        // deduced from the launch's arguments, so the name alone has no address).
        size_t last = callee.size();
        while (last > 0 && is_ident(callee[last - 1])) last--;
        const bool deduced = last < callee.size() && kernels.templates.count(callee.substr(last));
        const std::string kaddr = deduced ? "nullptr" : "CUDAHOST_KADDR(" + callee + ")";
        out += "cudahost::launch_(" + kaddr + ", [&](auto&&... cudahost_a_) { " + callee +
               "(cudahost_a_...); }, \"" + name_lit + "\", __FILE__, __LINE__, ";
        // copy the configuration, rewriting nothing inside but keeping literals intact
        out.append(s, cfg_begin, cfg_end - cfg_begin);
        out += ")";
        out.append(callee_nl, '\n');
        i = cfg_end + 3;
    }

    // i points at 'extern'. Returns true if it was an extern __shared__ declaration (and consumed it).
    bool extern_shared(size_t &i)
    {
        size_t j = i + 6, semi = std::string::npos;
        std::vector<std::string> toks;
        std::vector<size_t> tokpos;
        bool shared = false;
        while (j < s.size() && j < i + 2000) {
            j = skip_ws_comments(s, j);
            if (j >= s.size()) break;
            char c = s[j];
            if (c == ';') {
                semi = j;
                break;
            }
            if (c == '{' || c == '}' || c == '"') return false;
            if (is_ident(c)) {
                size_t k = j;
                while (k < s.size() && is_ident(s[k])) k++;
                std::string w = s.substr(j, k - j);
                if (w == "__shared__") shared = true;
                toks.push_back(w);
                tokpos.push_back(j);
                j = k;
                continue;
            }
            if (c == '(') { // group a parenthesised attribute argument into one token
                int d = 0;
                size_t k = j;
                while (k < s.size()) {
                    size_t l = skip_literal(s, k);
                    if (l != k) {
                        k = l;
                        continue;
                    }
                    if (s[k] == '(')
                        d++;
                    else if (s[k] == ')' && --d == 0)
                        break;
                    k++;
                }
                toks.push_back(s.substr(j, k + 1 - j));
                tokpos.push_back(j);
                j = k + 1;
                continue;
            }
            if (c == ':' && j + 1 < s.size() && s[j + 1] == ':') {
                toks.push_back("::");
                tokpos.push_back(j);
                j += 2;
                continue;
            }
            toks.push_back(std::string(1, c));
            tokpos.push_back(j);
            j++;
        }
        if (!shared || semi == std::string::npos) return false;
        // ... name [ ] ;
        size_t n = toks.size();
        if (n < 4 || toks[n - 1] != "]" || toks[n - 2] != "[" || !is_ident(toks[n - 3][0]))
            fail(i, "unsupported extern __shared__ declaration (expected: extern __shared__ T name[];)");
        std::string name = toks[n - 3];
        std::string type;
        for (size_t t = 0; t + 3 < n; t++) {
            const std::string &w = toks[t];
            if (w == "__shared__") continue;
            if (w == "__align__" || w == "alignas" || w == "__attribute__" || w == "__builtin_align__") {
                if (t + 1 < n - 3 && toks[t + 1][0] == '(') t++;
                continue;
            }
            if (!type.empty() && (is_ident(w[0]) && (is_ident(type.back())))) type += ' ';
            type += w;
        }
        if (type.empty()) fail(i, "extern __shared__ declaration without a type");
        if (at_namespace_scope()) {
            // A namespace-scope name must read the running block's buffer at every use, and still behave like an array
            // (reinterpret_cast, arithmetic, indexing): it becomes a macro for a pointer prvalue. Directives need their
            // own lines, so #line restores the numbering afterwards.
            int line_after = line_at(semi);
            std::string p;
            for (char c : path) {
                if (c == '"' || c == '\\') p += '\\';
                p += c;
            }
            out += "\n#define " + name + " (::cudahost::dyn_smem_ptr<" + type + " >())\n#line " +
                   std::to_string(line_after) + " \"" + p + "\"\n";
            i = semi + 1;
            return true;
        } else
            out += "[[maybe_unused]] " + type + "* " + name + " = cudahost::dyn_smem_ptr<" + type + " >();";
        out.append(count_nl(s, i, semi), '\n');
        i = semi + 1;
        return true;
    }

    // i at '__shared__' of a block-scope declaration `[static] __shared__ T name[dims];` (one declarator, no
    // initializer): appends `cudahost::shared_fill_(name);` on the same line, which fills the variable with garbage
    // once per block (the first thread that reaches the declaration), as a GPU's shared memory is not zero nor left
    // over from the previous block. Other forms are left alone (and keep thread-local storage's contents).
    bool static_shared(size_t &i)
    {
        if (in_directive || at_namespace_scope()) return false;
        int depth = 0, angle = 0;
        size_t j = i + 10, semi = std::string::npos, bracket = std::string::npos;
        while (j < s.size() && j < i + 1000) {
            size_t k = skip_literal(s, j);
            if (k != j) return false; // a literal in a declaration: not the simple form
            char c = s[j];
            if (c == '(' || c == '[') {
                if (c == '[' && depth == 0 && angle == 0 && bracket == std::string::npos) bracket = j;
                depth++;
            } else if (c == ')' || c == ']') {
                depth--;
            } else if (c == '<' && depth == 0) {
                angle++;
            } else if (c == '>' && depth == 0) {
                angle--;
            } else if (c == '{' || c == '}') {
                return false;
            } else if (depth == 0 && angle == 0 && (c == ',' || c == '=')) {
                return false;
            } else if (c == ';' && depth == 0) {
                semi = j;
                break;
            }
            j++;
        }
        if (semi == std::string::npos || angle != 0) return false;
        size_t e = bracket == std::string::npos ? semi : bracket;
        while (e > i && is_space(s[e - 1])) e--;
        size_t b = e;
        while (b > i && is_ident(s[b - 1])) b--;
        if (b == e || b <= i + 10 || (s[b] >= '0' && s[b] <= '9')) return false;
        std::string name = s.substr(b, e - b);
        // `= {}`: value-initialized thread-local storage (zero, static: no per-access initialization guard, which
        // GCC emits even for trivially constructible element types such as __half and __nv_bfloat16 and which
        // ThreadSanitizer would see racing between the fibers of a block); shared_fill_ then makes it garbage per block.
        out.append(s, i, semi - i);
        out += " = {}; cudahost::shared_fill_(" + name + ");";
        i = semi + 1;
        return true;
    }

    // The C string value of a sequence of string literals (with escapes; raw strings too). False if t holds anything
    // else.
    static bool string_value(const std::string &t, std::string &v)
    {
        size_t k = 0;
        bool any = false;
        for (;;) {
            k = skip_ws_comments(t, k);
            if (k >= t.size()) return any;
            if (t[k] == 'R' && k + 1 < t.size() && t[k + 1] == '"') {
                size_t open = t.find('(', k + 2);
                if (open == std::string::npos) return false;
                std::string close = ")" + t.substr(k + 2, open - k - 2) + "\"";
                size_t e = t.find(close, open + 1);
                if (e == std::string::npos) return false;
                v += t.substr(open + 1, e - open - 1);
                k = e + close.size();
                any = true;
                continue;
            }
            if (t[k] != '"') return false;
            size_t j = k + 1;
            while (j < t.size() && t[j] != '"') {
                char c = t[j];
                if (c == '\\' && j + 1 < t.size()) {
                    char e = t[++j];
                    switch (e) {
                    case 'n': v += '\n'; break;
                    case 't': v += '\t'; break;
                    case 'r': v += '\r'; break;
                    case '\n': break; // line continuation
                    default: v += e; break;
                    }
                } else {
                    v += c;
                }
                j++;
            }
            if (j >= t.size()) return false;
            k = j + 1;
            any = true;
        }
    }

    // i at 'asm' / '__asm__' / '__asm' (ending at kw_end) inside a function: the statement becomes the emulation of
    // its PTX (rewrite_asm.h). Returns false (and consumes nothing) when it is not an asm statement.
    // Whether the output's current logical line (backslash continuations included) is a #define.
    bool in_define_directive() const
    {
        if (!in_directive) return false;
        size_t k = out.size();
        while (k > 0 && !(out[k - 1] == '\n' && !(k >= 2 && out[k - 2] == '\\'))) k--;
        while (k < out.size() && (out[k] == ' ' || out[k] == '\t')) k++;
        if (k >= out.size() || out[k] != '#') return false;
        k++;
        while (k < out.size() && (out[k] == ' ' || out[k] == '\t')) k++;
        return out.compare(k, 6, "define") == 0;
    }

    bool asm_statement(size_t &i, size_t kw_end)
    {
        // in a function, or in a macro definition (`#define MMA(...) asm volatile(...)`, expanded in functions)
        const bool in_define = in_define_directive();
        if (!in_define && (in_directive || at_namespace_scope())) return false;
        size_t j = skip_ws_comments(s, kw_end);
        for (;;) {
            size_t e = j;
            while (e < s.size() && is_ident(s[e])) e++;
            std::string q = s.substr(j, e - j);
            if (q == "volatile" || q == "__volatile__" || q == "__volatile" || q == "inline" || q == "goto") {
                j = skip_ws_comments(s, e);
                continue;
            }
            break;
        }
        if (j >= s.size() || s[j] != '(') return false;
        size_t close = std::string::npos;
        int d = 0;
        for (size_t k = j; k < s.size();) {
            size_t l = skip_literal(s, k);
            if (l != k) {
                k = l;
                continue;
            }
            if (s[k] == '(')
                d++;
            else if (s[k] == ')' && --d == 0) {
                close = k;
                break;
            }
            k++;
        }
        if (close == std::string::npos) fail(i, "unterminated asm statement");
        // sections at the top-level colons (at this depth a "::" is two separators: `asm("..." :: "r"(x))`)
        std::vector<std::string> sec(1);
        d = 0;
        for (size_t k = j + 1; k < close;) {
            size_t l = skip_literal(s, k);
            if (l != k) {
                sec.back().append(s, k, l - k);
                k = l;
                continue;
            }
            char c = s[k];
            if (c == '\\' && k + 1 < close && s[k + 1] == '\n') { // a continued line (in a macro definition)
                sec.back() += "  ";
                k += 2;
                continue;
            }
            if (c == '(' || c == '[' || c == '{')
                d++;
            else if (c == ')' || c == ']' || c == '}')
                d--;
            if (c == ':' && d == 0)
                sec.emplace_back();
            else
                sec.back() += c;
            k++;
        }
        const int line = line_at(i);
        const std::string where = fs::path(path).filename().string() + ":" + std::to_string(line);
        std::string tmpl;
        asmx::Translation tr;
        if (!string_value(sec[0], tmpl)) {
            std::vector<asmx::Operand> none;
            tr = asmx::translate("cudahost.not_a_string_literal", none, where, line);
        } else {
            std::vector<asmx::Operand> ops;
            bool bad = false;
            for (size_t si = 1; si <= 2 && si < sec.size(); si++) {
                for (auto &o : asmx::split_top(sec[si])) {
                    if (o.empty()) continue;
                    asmx::Operand op;
                    std::string t = o;
                    size_t k = skip_ws_comments(t, 0);
                    if (k < t.size() && t[k] == '[') {
                        size_t e = t.find(']', k);
                        op.name = asmx::trim(t.substr(k + 1, e - k - 1));
                        k = e + 1;
                    }
                    k = skip_ws_comments(t, k);
                    size_t lit_end = skip_literal(t, k);
                    size_t paren = t.find('(', lit_end);
                    if (k >= t.size() || t[k] != '"' || paren == std::string::npos || t.back() != ')') {
                        bad = true;
                        break;
                    }
                    op.cons = t.substr(k + 1, lit_end - k - 2);
                    op.expr = t.substr(paren + 1, t.size() - paren - 2);
                    op.out = si == 1;
                    op.inout = op.cons.find('+') != std::string::npos;
                    ops.push_back(op);
                }
            }
            if (bad) {
                std::vector<asmx::Operand> none;
                tr = asmx::translate("cudahost.unparsed_operand_list", none, where, line);
            } else {
                tr = asmx::translate(tmpl, ops, where, line);
            }
        }
        out += tr.code;
        for (size_t n = count_nl(s, i, close); n > 0; n--) out += in_define ? " \\\n" : "\n";
        i = close + 1;
        return true;
    }

    // i at '#'. Handles #include "x.h" / "x.cuh" / <x.cuh> found next to the file or in an -I directory: the header
    // is rewritten too (recursively), so that launches, kernels and shared memory in headers work. Headers of the
    // CUDA toolkit and of cudahost (include roots holding cuda_runtime.h or cudahost/cudahost.h) are left alone, as
    // are <x.h> headers. Other directives are copied verbatim (they are still scanned for literals).
    bool include(size_t &i)
    {
        size_t j = i + 1;
        while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) j++;
        if (s.compare(j, 7, "include") != 0 || (j + 7 < s.size() && is_ident(s[j + 7]))) return false;
        j += 7;
        while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) j++;
        if (j >= s.size() || (s[j] != '"' && s[j] != '<')) return false;
        const bool angle = s[j] == '<';
        size_t q = s.find(angle ? '>' : '"', j + 1);
        if (q == std::string::npos || s.find('\n', j) < q) return false;
        std::string inc = s.substr(j + 1, q - j - 1);
        fs::path ip(inc);
        std::string ext = ip.extension().string();
        bool cuda = ext == ".cuh" || ext == ".cu";
        if (angle && !cuda) return false;
        fs::path found;
        bool local = false;
        std::vector<fs::path> cands, roots;
        if (!angle) {
            cands.push_back(fs::path(path).parent_path() / ip);
            roots.push_back(fs::path());
        }
        for (auto &d : g_include_dirs) {
            cands.push_back(fs::path(d) / ip);
            roots.push_back(fs::path(d));
        }
        size_t which = 0;
        for (size_t c = 0; c < cands.size(); c++) {
            std::error_code ec;
            if (fs::is_regular_file(cands[c], ec)) {
                found = fs::weakly_canonical(fs::absolute(cands[c]));
                local = !angle && c == 0;
                which = c;
                break;
            }
        }
        if (found.empty()) return false; // leave it to the compiler
        if (!local) {
            std::error_code ec;
            const fs::path &r = roots[which];
            if (fs::exists(r / "cuda_runtime.h", ec) || fs::exists(r / "cudahost" / "cudahost.h", ec) ||
                fs::exists(r / "cooperative_groups.h", ec))
                return false; // the toolkit's or cudahost's own headers
        }
        std::string mangled = found.string();
        for (char &c : mangled)
            if (c == '/' || c == '\\' || c == ':') c = '_';
        fs::path outp = fs::path(out_dir) / (mangled + ".cpp");
        if (g_rewritten.insert(outp.string()).second)
            g_header_kernels[outp.string()] = rewrite_file(found.string(), outp.string(), out_dir, false);
        kernels.merge(g_header_kernels[outp.string()]);
        out.append(s, i, j - i);
        out += "\"" + outp.string() + "\"";
        i = q + 1;
        return true;
    }

    // i at '(' of a __global__ function's parameter list: records the kernel's name (the identifier before the
    // list, or before its template arguments in an explicit specialization), so that calls of it are rejected.
    void global_params(size_t &i)
    {
        size_t e = out.size();
        while (e > 0 && is_space(out[e - 1])) e--;
        if (e > 0 && out[e - 1] == '>') {
            int depth = 0;
            while (e > 0) {
                char c = out[--e];
                if (c == '>')
                    depth++;
                else if (c == '<' && --depth == 0)
                    break;
            }
            while (e > 0 && is_space(out[e - 1])) e--;
        }
        size_t b = e;
        while (b > 0 && is_ident(out[b - 1])) b--;
        if (b < e) {
            kernels.all.insert(out.substr(b, e - b));
            if (global_template) kernels.templates.insert(out.substr(b, e - b));
        }
        out += '(';
        i++;
        global_pending = false;
    }

    // i just past an identifier naming a kernel (at w_pos). If the kernel is called like a function (its name,
    // template arguments if any, then '('), writes the name wrapped in cudahost's deleted function and returns
    // true; a launch (<<<), a declaration or a use as a value is left alone.
    bool unconfigured_call(size_t w_pos, size_t &i)
    {
        if (in_directive || global_pending) return false;
        // the name's qualification already written (ns::kernel, ::kernel) goes inside the wrapper too
        size_t q = out.size();
        for (;;) {
            size_t k = q;
            while (k > 0 && is_space(out[k - 1])) k--;
            if (k < 2 || out[k - 1] != ':' || out[k - 2] != ':') break;
            const size_t colons = k - 2;
            k = colons;
            while (k > 0 && is_space(out[k - 1])) k--;
            size_t b = k;
            while (b > 0 && is_ident(out[b - 1])) b--;
            if (b == k) { // a leading :: ends the qualification
                q = colons;
                break;
            }
            q = b;
        }
        size_t k = q;
        while (k > 0 && is_space(out[k - 1])) k--;
        if (k > 0 && (out[k - 1] == '.' || (out[k - 1] == '>' && k > 1 && out[k - 2] == '-')))
            return false; // a member of that name
        size_t wb = k;
        while (wb > 0 && is_ident(out[wb - 1])) wb--;
        const std::string before = out.substr(wb, k - wb);
        if (before == "void" || before == "friend" || before == "__global__") return false; // a declaration
        size_t j = skip_ws_comments(s, i);
        if (j < s.size() && s[j] == '<') {
            if (s.compare(j, 3, "<<<") == 0) return false;
            int depth = 0;
            size_t t = j;
            for (; t < s.size(); t++) {
                size_t l = skip_literal(s, t);
                if (l != t) {
                    t = l - 1;
                    continue;
                }
                char c = s[t];
                if (c == ';' || c == '{' || c == '}') return false;
                if (c == '<')
                    depth++;
                else if (c == '>' && --depth == 0)
                    break;
            }
            if (t >= s.size()) return false;
            j = skip_ws_comments(s, t + 1);
        }
        if (j >= s.size() || s[j] != '(') return false;
        const std::string qual = out.substr(q);
        out.resize(q);
        out += "::cudahost::a_global_function_call_must_be_configured_with_launch_syntax(" + qual;
        out.append(s, w_pos, j - w_pos);
        out += ")";
        i = j;
        return true;
    }

    // i at '(' of an attribute's arguments after __global__: copy the group verbatim.
    void copy_group(size_t &i)
    {
        int d = 0;
        size_t k = i;
        while (k < s.size()) {
            size_t l = skip_literal(s, k);
            if (l != k) {
                k = l;
                continue;
            }
            if (s[k] == '(')
                d++;
            else if (s[k] == ')' && --d == 0)
                break;
            k++;
        }
        if (k >= s.size()) fail(i, "unterminated attribute argument list after __global__");
        out.append(s, i, k + 1 - i);
        i = k + 1;
    }

    void run(bool main_file)
    {
        std::string p;
        for (char c : path) {
            if (c == '"' || c == '\\') p += '\\';
            p += c;
        }
        out.reserve(s.size() + s.size() / 4 + 256);
        if (main_file)
            out += "#line 1 \"" + p + "\"\n";
        else
            out += "#line 1 \"" + p + "\"\n";
        size_t i = 0;
        bool line_start = true;
        while (i < s.size()) {
            size_t k = skip_literal(s, i);
            if (k != i) {
                out.append(s, i, k - i);
                i = k;
                line_start = false;
                continue;
            }
            char c = s[i];
            if (c == '\n') {
                if (!(i > 0 && s[i - 1] == '\\')) {
                    if (in_directive) global_pending = false; // `#define K __global__`: nothing to do
                    in_directive = false;
                }
                out += c;
                i++;
                line_start = true;
                continue;
            }
            if (is_space(c)) {
                out += c;
                i++;
                continue;
            }
            if (c == '#' && line_start) {
                line_start = false;
                in_directive = true;
                if (include(i)) continue;
                out += c;
                i++;
                continue;
            }
            line_start = false;
            if (c == '<' && s.compare(i, 3, "<<<") == 0) {
                launch(i);
                continue;
            }
            if (global_pending) {
                if (c == '(' && global_attr) {
                    global_attr = false;
                    copy_group(i);
                    continue;
                }
                if (c == '(' && global_angle == 0) {
                    global_params(i);
                    continue;
                }
                if (c == '<')
                    global_angle++;
                else if (c == '>' && global_angle > 0)
                    global_angle--;
                else if (c == ';' || c == '{' || c == '}' || c == '=')
                    global_pending = false;
            }
            if (c == '{') {
                braces.push_back(brace_is_namespace());
                out += c;
                i++;
                continue;
            }
            if (c == '}') {
                if (!braces.empty()) braces.pop_back();
                out += c;
                i++;
                continue;
            }
            if (is_ident(c)) {
                size_t e = i;
                while (e < s.size() && is_ident(s[e])) e++;
                if (i > 0 && is_ident(s[i - 1])) { // not at a word start (cannot happen, kept for safety)
                    out.append(s, i, e - i);
                    i = e;
                    continue;
                }
                std::string w = s.substr(i, e - i);
                if (w == "__noinline__") {
                    out += "__attribute__((noinline))";
                    i = e;
                    continue;
                }
                if (w == "__global__") {
                    // a template: `template` starts the declaration (since the last ';', '{' or '}')
                    size_t k = out.size();
                    while (k > 0 && out[k - 1] != ';' && out[k - 1] != '{' && out[k - 1] != '}') k--;
                    const std::string head = " " + squeeze(out.substr(k));
                    const size_t t = head.find("template");
                    global_template = t != std::string::npos && head[t - 1] == ' ' &&
                                      (t + 8 == head.size() || !is_ident(head[t + 8]));
                    global_pending = true;
                    global_attr = false;
                    global_angle = 0;
                } else if (global_pending) {
                    global_attr = w == "__launch_bounds__" || w == "__cluster_dims__" ||
                                  w == "__attribute__" || w == "__declspec" || w == "alignas" ||
                                  w == "__maxnreg__" || w == "__align__" || w == "decltype";
                }
                if (w == "extern" && extern_shared(i)) continue;
                if ((w == "asm" || w == "__asm__" || w == "__asm") && asm_statement(i, e)) continue;
                if (w == "__shared__" && static_shared(i)) continue;
                if (kernels.all.count(w)) {
                    size_t after = e;
                    if (unconfigured_call(i, after)) {
                        i = after;
                        continue;
                    }
                }
                out += w;
                i = e;
                continue;
            }
            out += c;
            i++;
        }
    }

    // Rewrites in into outp; returns the kernel names in declares (with those of its includes).
    static KernelNames rewrite_file(const std::string &in, const std::string &outp,
                                    const std::string &out_dir, bool main_file)
    {
        std::ifstream f(in, std::ios::binary);
        if (!f) throw Fail{ "cudahost-rewrite: cannot read " + in + ": " + std::strerror(errno) };
        std::stringstream ss;
        ss << f.rdbuf();
        std::string src = ss.str();
        g_deps.insert(in);
        Rewriter r(in, out_dir, src);
        r.run(main_file);
        std::error_code ec;
        fs::create_directories(fs::path(outp).parent_path(), ec);
        // write atomically (parallel builds may rewrite the same header)
        std::string tmp = outp + ".tmp" + std::to_string((long)getpid_portable());
        {
            std::ofstream o(tmp, std::ios::binary);
            if (!o) throw Fail{ "cudahost-rewrite: cannot write " + tmp };
            o << r.out;
            if (!o) throw Fail{ "cudahost-rewrite: write failed: " + tmp };
        }
        // Always replace the output (a new timestamp): the build tool restats it, and a change in an included .cuh must
        // make the .cu's object rebuild even when the .cu's own rewrite is unchanged.
        fs::rename(tmp, outp, ec);
        if (ec) throw Fail{ "cudahost-rewrite: cannot rename " + tmp + " to " + outp + ": " + ec.message() };
        return r.kernels;
    }

    static long getpid_portable();
};

} // namespace

#include <unistd.h>
long Rewriter::getpid_portable() { return (long)getpid(); }

int main(int argc, char **argv)
{
    std::vector<std::string> pos;
    std::string depfile;
    for (int a = 1; a < argc; a++) {
        std::string v = argv[a];
        if (v == "-I" && a + 1 < argc)
            g_include_dirs.push_back(argv[++a]);
        else if (v.rfind("-I", 0) == 0 && v.size() > 2)
            g_include_dirs.push_back(v.substr(2));
        else if (v == "--depfile" && a + 1 < argc)
            depfile = argv[++a];
        else if (v == "-h" || v == "--help") {
            std::printf("usage: cudahost-rewrite [-I dir]... [--depfile file] in.cu out.cpp\n");
            return 0;
        } else
            pos.push_back(v);
    }
    if (pos.size() != 2) {
        std::fprintf(stderr, "usage: cudahost-rewrite [-I dir]... [--depfile file] in.cu out.cpp\n");
        return 2;
    }
    try {
        std::string in = fs::weakly_canonical(fs::absolute(pos[0])).string();
        std::string outp = fs::absolute(pos[1]).string();
        Rewriter::rewrite_file(in, outp, outp + ".inc", true);
        if (!depfile.empty()) {
            std::ofstream d(depfile);
            d << outp << ":";
            for (auto &x : g_deps) {
                d << " \\\n  ";
                for (char c : x) {
                    if (c == ' ') d << '\\';
                    d << c;
                }
            }
            d << "\n";
        }
    } catch (const Fail &f) {
        std::fprintf(stderr, "%s\n", f.msg.c_str());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "cudahost-rewrite: %s\n", e.what());
        return 1;
    }
    return 0;
}
