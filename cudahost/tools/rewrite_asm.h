// cudahost-rewrite: translation of inline PTX (asm statements) into calls of cudahost's emulation (cudahost/ptx.h).
// Included by rewrite.cpp.
//
//   asm [volatile] ("template" : outputs : inputs [: clobbers]);
//     -> do { <operand registers> <one call per PTX instruction> <outputs written back> } while (0);
//
// The template (string literals, concatenated) is parsed as PTX: `{` `}` scopes, `.reg` declarations (locals),
// instructions with an optional `@p` / `@!p` guard, operands `%N`, `%[name]`, local registers, immediates, vectors
// `{a, b}` and addresses `[r]`, `[r+imm]`. Each instruction must be in the emulated set (kInstrDoc below, the table in
// cudahost/README.md); any other becomes a call of a function declared with __attribute__((error(...))), i.e. a
// compile-time error that names the instruction and its line, in the code that is compiled (a disabled
// `#if __CUDA_ARCH__` branch or an uninstantiated template is not).
#ifndef CUDAHOST_REWRITE_ASM_H
#define CUDAHOST_REWRITE_ASM_H

#include <cctype>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace asmx {

struct Operand {
    std::string cons; // the constraint letter: r f h l d n
    std::string expr; // the C++ expression
    std::string name; // [name] or empty
    bool out = false, inout = false;
};

struct Translation {
    std::string code;    // the replacement (one line)
    std::string problem; // non-empty: the statement cannot be translated (reported as a compile-time error)
};

inline std::string trim(const std::string &s)
{
    size_t a = 0, b = s.size();
    while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\n' || s[a] == '\r')) a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\n' || s[b - 1] == '\r')) b--;
    return s.substr(a, b - a);
}

// Splits at top-level commas (outside {} [] ()).
inline std::vector<std::string> split_top(const std::string &s)
{
    std::vector<std::string> r;
    int d = 0;
    std::string cur;
    for (char c : s) {
        if (c == '{' || c == '[' || c == '(') d++;
        if (c == '}' || c == ']' || c == ')') d--;
        if (c == ',' && d == 0) {
            r.push_back(trim(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!trim(cur).empty() || !r.empty()) r.push_back(trim(cur));
    return r;
}

struct Ctx {
    std::vector<Operand> &ops;
    std::map<std::string, std::string> regs; // PTX local register -> C++ name
    std::map<std::string, bool> preds;       // local predicate registers
    std::string err;
    explicit Ctx(std::vector<Operand> &o) : ops(o) {}

    std::string opname(size_t k) const { return "cudahost_p" + std::to_string(k) + "_"; }

    // a register or immediate operand as a C++ expression (empty on error)
    std::string val(const std::string &t0)
    {
        std::string t = trim(t0);
        if (t.empty()) return err = "empty operand", "";
        if (t[0] == '%' && t.size() > 1 && t[1] == '%') {
            std::string sr = t.substr(2);
            if (sr == "laneid") return "::cudahost::ptx::laneid()";
            if (sr == "warpid") return "::cudahost::ptx::warpid()";
            return err = "special register %" + sr + " is not emulated", "";
        }
        if (t[0] == '%') {
            size_t k;
            if (t.size() > 2 && t[1] == '[') {
                std::string nm = t.substr(2, t.find(']') - 2);
                for (k = 0; k < ops.size(); k++)
                    if (ops[k].name == nm) break;
                if (k == ops.size()) return err = "no operand named [" + nm + "]", "";
            } else {
                k = (size_t)std::strtoul(t.c_str() + 1, nullptr, 10);
                if (k >= ops.size()) return err = "operand " + t + " does not exist", "";
            }
            if (ops[k].cons == "n") return "(" + ops[k].expr + ")";
            return opname(k);
        }
        // PTX float immediates: 0f + 8 hex digits (.f32 bits), 0d + 16 (.f64)
        if (t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F' || t[1] == 'd' || t[1] == 'D')) {
            const bool dbl = t[1] == 'd' || t[1] == 'D';
            if (t.size() != (dbl ? 18u : 10u) ||
                t.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
                return err = "malformed float immediate '" + t + "'", "";
            return std::string(dbl ? "(uint64_t)0x" : "(uint32_t)0x") + t.substr(2) + "u";
        }
        if ((t[0] >= '0' && t[0] <= '9') || t[0] == '-') {
            std::string lit = t;
            if (lit.size() > 1 && (lit.back() == 'U' || lit.back() == 'u')) lit.pop_back();
            return "(" + lit + ")";
        }
        auto it = regs.find(t);
        if (it != regs.end()) return it->second;
        return err = "unknown operand '" + t + "'", "";
    }
    bool is_pred(const std::string &t) const { return preds.count(trim(t)) != 0; }
    // an asm output operand (%N or %[name] with an = or + constraint of letter r or f): its address, as a void *
    // expression (empty + err otherwise)
    std::string out_addr(const std::string &t0, const std::string &what)
    {
        std::string t = trim(t0);
        size_t k = ops.size();
        if (t.size() > 2 && t[0] == '%' && t[1] == '[') {
            std::string nm = t.substr(2, t.find(']') - 2);
            for (k = 0; k < ops.size(); k++)
                if (ops[k].name == nm) break;
        } else if (t.size() > 1 && t[0] == '%' && t[1] >= '0' && t[1] <= '9') {
            k = (size_t)std::strtoul(t.c_str() + 1, nullptr, 10);
        }
        if (k >= ops.size() || !ops[k].out || (ops[k].cons != "r" && ops[k].cons != "f"))
            return err = what + " must be asm output operands (\"+f\" or \"+r\"), got '" + t + "'", "";
        return "(void *)&(" + ops[k].expr + ")";
    }
    // [base], [base+imm], [base-imm]: the address as a uint64_t expression
    std::string addr(const std::string &t0)
    {
        std::string t = trim(t0);
        if (t.size() < 2 || t.front() != '[' || t.back() != ']')
            return err = "expected an address [..], got '" + t + "'", "";
        std::string in = trim(t.substr(1, t.size() - 2));
        size_t pm = in.find_first_of("+-", 1);
        std::string base = pm == std::string::npos ? in : in.substr(0, pm);
        std::string b = val(base);
        if (b.empty()) return "";
        std::string r = "(uint64_t)(" + b + ")";
        if (pm != std::string::npos)
            r += " " + std::string(1, in[pm]) + " (uint64_t)(" + trim(in.substr(pm + 1)) + ")";
        return "(" + r + ")";
    }
    // {a, b, c} (or a single register): the elements
    std::vector<std::string> vec(const std::string &t0)
    {
        std::string t = trim(t0);
        if (!t.empty() && t.front() == '{') {
            if (t.back() != '}') return err = "unterminated vector operand", std::vector<std::string>{};
            t = t.substr(1, t.size() - 2);
        }
        std::vector<std::string> r;
        for (auto &e : split_top(t)) {
            std::string v = val(e);
            if (v.empty()) return {};
            r.push_back(v);
        }
        return r;
    }
};

inline std::string lit(const std::string &s)
{
    std::string r = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') r += '\\';
        r += c;
    }
    return r + "\"";
}

// ldmatrix / stmatrix qualifiers in any order (ptxas accepts e.g. ldmatrix.sync.aligned.x4.m8n8.shared.b16): the
// canonical order, or op unchanged.
inline std::string canonical_matrix_op(const std::string &op)
{
    if (op.rfind("ldmatrix.", 0) != 0 && op.rfind("stmatrix.", 0) != 0) return op;
    std::vector<std::string> q;
    size_t p = 0;
    while (p <= op.size()) {
        size_t e = op.find('.', p);
        if (e == std::string::npos) e = op.size();
        q.push_back(op.substr(p, e - p));
        p = e + 1;
    }
    std::string num, trans, space;
    int sync = 0, aligned = 0, shape = 0, type = 0;
    for (size_t i = 1; i < q.size(); i++) {
        const std::string &x = q[i];
        if (x == "sync")
            sync++;
        else if (x == "aligned")
            aligned++;
        else if (x == "m8n8")
            shape++;
        else if (x == "b16")
            type++;
        else if (x == "x1" || x == "x2" || x == "x4")
            num = x;
        else if (x == "trans")
            trans = ".trans";
        else if (x == "shared" || x == "shared::cta")
            space = x;
        else
            return op;
    }
    if (sync != 1 || aligned != 1 || shape != 1 || type != 1 || num.empty() || space.empty()) return op;
    return q[0] + ".sync.aligned.m8n8." + num + trans + "." + space + ".b16";
}

// One instruction (without guard) -> C++ statements; empty + c.err on error.
inline std::string instr(Ctx &c, const std::string &op0, const std::vector<std::string> &a)
{
    const std::string op = canonical_matrix_op(op0);
    std::smatch m;
    auto need = [&](size_t n) {
        if (a.size() != n)
            c.err = "'" + op + "' takes " + std::to_string(n) + " operands, got " + std::to_string(a.size());
        return a.size() == n;
    };
    auto assign = [](const std::string &d, const std::string &v) {
        return d + " = (decltype(" + d + "))(" + v + ");";
    };
    static const std::regex re_mma(
        R"(mma\.sync\.aligned\.(m16n8k16|m16n8k8|m16n8k4)\.row\.col\.(f32|f16)\.(f16|bf16|tf32)\.(f16|bf16|tf32)\.(f32|f16))");
    static const std::regex re_ldm(
        R"(ldmatrix\.sync\.aligned\.m8n8\.x(1|2|4)(\.trans)?\.shared(::cta)?\.b16)");
    static const std::regex re_stm(
        R"(stmatrix\.sync\.aligned\.m8n8\.x(1|2|4)(\.trans)?\.shared(::cta)?\.b16)");
    static const std::regex re_mov_m(R"(movmatrix\.sync\.aligned\.m8n8\.trans\.b16)");
    static const std::regex re_cp(
        R"(cp\.async\.(ca|cg)\.shared(::cta)?\.global((\.L2::(64B|128B|256B))|(\.L2::cache_hint))*)");
    static const std::regex re_cvta_to_s(R"(cvta\.to\.shared(::cta)?\.(u32|u64))");
    static const std::regex re_cvta_s(R"(cvta\.shared(::cta)?\.(u32|u64))");
    static const std::regex re_cvta_g(R"(cvta(\.to)?\.global\.u64)");
    static const std::regex re_cvt32(R"(cvt\.(u32|s32|b32)\.(u64|s64|b64))");
    static const std::regex re_cvt64(R"(cvt\.(u64|s64|b64)\.(u32|b32))");
    static const std::regex re_mov(R"(mov\.(b16|u16|s16|b32|u32|s32|b64|u64|s64))");
    static const std::regex re_setp(R"(setp\.(eq|ne|lt|le|gt|ge)\.(b32|u32|s32|b64|u64|s64))");
    static const std::regex re_bar(R"((bar|barrier)(\.cta)?\.(sync|arrive)(\.aligned)?)");
    static const std::regex re_ex2(R"(ex2\.approx(\.ftz)?\.f32)");
    static const std::regex re_ld(R"(ld\.shared(::cta)?\.(b16|u16|s16|b32|u32|s32|f32|b64|u64|s64|f64))");
    static const std::regex re_st(R"(st\.shared(::cta)?\.(b16|u16|s16|b32|u32|s32|f32|b64|u64|s64|f64))");
    const std::string W = "__FILE__, __LINE__";

    if (std::regex_match(op, m, re_mma)) {
        std::string shape = m[1], dt = m[2], at = m[3], bt = m[4], ct = m[5];
        int k = shape == "m16n8k16" ? 16 : shape == "m16n8k8" ? 8 : 4;
        if (at != bt) return c.err = "'" + op + "': A and B types differ", "";
        if (k == 4 && at != "tf32") return c.err = "'" + op + "': m16n8k4 takes .tf32 only", "";
        if (k == 16 && at == "tf32") return c.err = "'" + op + "': m16n8k16 does not take .tf32", "";
        if ((at == "bf16" || at == "tf32") && (dt != "f32" || ct != "f32"))
            return c.err = "'" + op + "': .bf16/.tf32 need .f32 accumulators", "";
        if (!need(4)) return "";
        auto D = c.vec(a[0]), A = c.vec(a[1]), B = c.vec(a[2]), C = c.vec(a[3]);
        if (!c.err.empty()) return "";
        size_t na = at == "tf32" ? (k == 8 ? 4 : 2) : (k == 16 ? 4 : 2);
        size_t nb = at == "tf32" ? (k == 8 ? 2 : 1) : (k == 16 ? 2 : 1);
        size_t nd = dt == "f32" ? 4 : 2, nc = ct == "f32" ? 4 : 2;
        if (D.size() != nd || A.size() != na || B.size() != nb || C.size() != nc)
            return c.err = "'" + op + "': wrong number of registers in a vector operand", "";
        auto arr = [](const std::string &n, const std::vector<std::string> &v) {
            std::string s = "uint32_t " + n + "[" + std::to_string(v.size()) + "] = {";
            for (size_t i = 0; i < v.size(); i++)
                s += (i ? ", " : "") + std::string("(uint32_t)(") + v[i] + ")";
            return s + "};";
        };
        auto code = [](const std::string &t) {
            return std::string(t == "f16" ? "0" : t == "bf16" ? "1" : t == "tf32" ? "2" : "3");
        };
        std::string s = "{ " + arr("cudahost_a_", A) + " " + arr("cudahost_b_", B) + " " +
                        arr("cudahost_c_", C) + " uint32_t cudahost_d_[" + std::to_string(nd) +
                        "]; ::cudahost::ptx::mma_sync_(" + lit(op) + ", " + W + ", " + std::to_string(k) +
                        ", " + code(at) + ", " + code(ct) + ", " + code(dt) +
                        ", cudahost_d_, cudahost_a_, cudahost_b_, cudahost_c_);";
        for (size_t i = 0; i < nd; i++) s += " " + assign(D[i], "cudahost_d_[" + std::to_string(i) + "]");
        return s + " }";
    }
    if (std::regex_match(op, m, re_ldm) || std::regex_match(op, m, re_stm)) {
        bool ld = op[0] == 'l';
        int n = std::stoi(m[1]);
        bool trans = m[2].matched;
        if (!need(2)) return "";
        auto R = c.vec(ld ? a[0] : a[1]);
        std::string ad = c.addr(ld ? a[1] : a[0]);
        if (!c.err.empty()) return "";
        if ((int)R.size() != n) return c.err = "'" + op + "' needs " + std::to_string(n) + " registers", "";
        std::string s = "{ uint32_t cudahost_v_[" + std::to_string(n) + "]";
        if (!ld) {
            s += " = {";
            for (int i = 0; i < n; i++) s += (i ? ", " : "") + std::string("(uint32_t)(") + R[i] + ")";
            s += "}";
        }
        s += "; ::cudahost::ptx::" + std::string(ld ? "ldmatrix_(" : "stmatrix_(") + lit(op) + ", " + W +
             ", " + std::to_string(n) + ", " + (trans ? "true" : "false") + ", cudahost_v_, " + ad + ");";
        if (ld)
            for (int i = 0; i < n; i++) s += " " + assign(R[i], "cudahost_v_[" + std::to_string(i) + "]");
        return s + " }";
    }
    if (std::regex_match(op, m, re_mov_m)) {
        if (!need(2)) return "";
        std::string d = c.val(a[0]), x = c.val(a[1]);
        if (!c.err.empty()) return "";
        return assign(d, "::cudahost::ptx::movmatrix_(" + lit(op) + ", " + W + ", (uint32_t)(" + x + "))");
    }
    if (std::regex_match(op, m, re_cp)) {
        bool cg = m[1] == "cg";
        bool hint = op.find(".L2::cache_hint") != std::string::npos;
        std::vector<std::string> v = a;
        if (hint) {
            if (v.size() < 4) return c.err = "'" + op + "': missing cache-policy operand", "";
            v.pop_back();
        }
        if (v.size() != 3 && v.size() != 4) return c.err = "'" + op + "' takes 3 or 4 operands", "";
        std::string dst = c.addr(v[0]), src = c.addr(v[1]), sz = c.val(v[2]);
        if (!c.err.empty()) return "";
        std::string src_size = sz;
        if (v.size() == 4) {
            if (c.is_pred(v[3]))
                src_size = "(" + c.val(v[3]) + " ? 0 : (int)" + sz + ")"; // ignore-src: zero fill
            else
                src_size = c.val(v[3]);
            if (!c.err.empty()) return "";
        }
        if (cg && trim(v[2]) != "16" && (trim(v[2])[0] >= '0' && trim(v[2])[0] <= '9'))
            return c.err = "'" + op + "': .cg copies 16 bytes", "";
        return "::cudahost::ptx::cp_async_(" + W + ", " + dst + ", " + src + ", (int)" + sz + ", (int)" +
               src_size + ");";
    }
    static const std::regex re_wg_mma(
        R"(wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.(f32|f16)\.(bf16|f16)\.(bf16|f16))");
    if (std::regex_match(op, m, re_wg_mma)) {
        const int n = std::atoi(m[1].str().c_str());
        const std::string dt = m[2], at = m[3], bt = m[4];
        if (n < 8 || n > 256 || n % 8 != 0)
            return c.err = "'" + op + "': N must be a multiple of 8 from 8 to 256", "";
        if (at != bt) return c.err = "'" + op + "': A and B types differ", "";
        if (at == "bf16" && dt != "f32") return c.err = "'" + op + "': .bf16 needs .f32 accumulators", "";
        if (a.size() != 8 && a.size() != 7)
            return c.err = "'" + op + "' takes 8 operands (A from a descriptor) or 7 (A from registers)", "";
        const bool rs = a.size() == 7;
        const int nd = dt == "f32" ? n / 2 : n / 4;
        std::string dl = trim(a[0]);
        if (dl.size() < 2 || dl.front() != '{' || dl.back() != '}')
            return c.err = "'" + op + "': the accumulators must be a vector {..}", "";
        std::vector<std::string> dtok = split_top(dl.substr(1, dl.size() - 2));
        if ((int)dtok.size() != nd)
            return c.err = "'" + op + "' needs " + std::to_string(nd) + " accumulator registers", "";
        std::vector<std::string> D = c.vec(a[0]), A;
        std::string addrs, vals;
        for (size_t i = 0; i < dtok.size() && c.err.empty(); i++) {
            addrs += (i ? ", " : "") + c.out_addr(dtok[i], "the accumulators of wgmma.mma_async");
            if (c.err.empty()) vals += (i ? ", " : "") + std::string("(uint32_t)(") + D[i] + ")";
        }
        std::string adesc = "0", areg = "nullptr";
        if (rs) {
            A = c.vec(a[1]);
            if (c.err.empty() && A.size() != 4)
                return c.err = "'" + op + "': A from registers takes 4 registers", "";
        } else {
            adesc = c.val(a[1]);
        }
        std::string bdesc = c.val(a[2]), sd = c.val(a[3]), sa = c.val(a[4]), sb = c.val(a[5]);
        std::string ta = rs ? "0" : c.val(a[6]), tb = c.val(a[rs ? 6 : 7]);
        if (!c.err.empty()) return "";
        std::string s = "{ void *cudahost_da_[" + std::to_string(nd) + "] = {" + addrs +
                        "}; uint32_t cudahost_dv_[" + std::to_string(nd) + "] = {" + vals + "};";
        if (rs) {
            s += " uint32_t cudahost_a_[4] = {";
            for (size_t i = 0; i < 4; i++) s += (i ? ", " : "") + std::string("(uint32_t)(") + A[i] + ")";
            s += "};";
            areg = "cudahost_a_";
        }
        s += " ::cudahost::ptx::wgmma_mma_async_(" + lit(op) + ", " + W + ", " + std::to_string(n) + ", " +
             (dt == "f32" ? "3" : "0") + ", " + (at == "bf16" ? "1" : "0") + ", " + areg + ", (uint64_t)(" +
             adesc + "), (uint64_t)(" + bdesc + "), (int)((" + sd + ") != 0), (int)(" + sa + "), (int)(" +
             sb + "), (int)(" + ta + "), (int)(" + tb + "), " + std::to_string(nd) +
             ", cudahost_da_, cudahost_dv_);";
        // until the wgmma.wait_group that covers it, the accumulators read as NaN
        for (auto &d : D) s += " " + assign(d, dt == "f32" ? "0x7fffffffu" : "0x7fff7fffu");
        return s + " }";
    }
    if (op == "wgmma.fence.sync.aligned")
        return need(0) ? "::cudahost::ptx::wgmma_fence_(" + lit(op) + ", " + W + ");" : "";
    if (op == "wgmma.commit_group.sync.aligned")
        return need(0) ? "::cudahost::ptx::wgmma_commit_(" + lit(op) + ", " + W + ");" : "";
    if (op == "wgmma.wait_group.sync.aligned") {
        if (!need(1)) return "";
        std::string n = c.val(a[0]);
        return n.empty() ? "" : "::cudahost::ptx::wgmma_wait_(" + lit(op) + ", " + W + ", (int)" + n + ");";
    }
    static const std::regex re_fence_proxy(
        R"(fence\.proxy\.async(\.shared::cta|\.shared::cluster|\.global)?)");
    if (std::regex_match(op, m,
                         re_fence_proxy)) // orders generic-proxy writes before wgmma reads: nothing to do
        return need(0) ? "(void)0;" : "";
    if (op == "cp.async.commit_group") return need(0) ? "::cudahost::ptx::cp_async_commit_();" : "";
    if (op == "cp.async.wait_all") return need(0) ? "::cudahost::ptx::cp_async_wait_all_();" : "";
    if (op == "cp.async.wait_group") {
        if (!need(1)) return "";
        std::string n = c.val(a[0]);
        return n.empty() ? "" : "::cudahost::ptx::cp_async_wait_((int)" + n + ");";
    }
    if (std::regex_match(op, m, re_cvta_to_s)) {
        if (!need(2)) return "";
        std::string d = c.val(a[0]), x = c.val(a[1]);
        if (!c.err.empty()) return "";
        return assign(d, "::cudahost::ptx::smem_encode_((const void*)(uintptr_t)(" + x + "))");
    }
    if (std::regex_match(op, m, re_cvta_s)) {
        if (!need(2)) return "";
        std::string d = c.val(a[0]), x = c.val(a[1]);
        if (!c.err.empty()) return "";
        return assign(d, "(uintptr_t)::cudahost::ptx::smem_decode_((uint64_t)(" + x + "), " + W + ")");
    }
    if (std::regex_match(op, m, re_cvta_g) || std::regex_match(op, m, re_cvt64) ||
        std::regex_match(op, m, re_mov) || std::regex_match(op, m, re_cvt32)) {
        if (!need(2)) return "";
        std::string d = c.val(a[0]), x = c.val(a[1]);
        if (!c.err.empty()) return "";
        if (std::regex_match(op, re_cvt32)) return assign(d, "(uint32_t)(" + x + ")");
        if (std::regex_match(op, re_cvt64)) return assign(d, "(uint64_t)(uint32_t)(" + x + ")");
        return assign(d, x);
    }
    if (std::regex_match(op, m, re_setp)) {
        if (!need(3)) return "";
        std::string p = c.val(a[0]), x = c.val(a[1]), y = c.val(a[2]);
        if (!c.err.empty()) return "";
        std::string cmp = m[1], ty = m[2];
        std::string cast = ty == "s32"    ? "(int32_t)"
                           : ty == "s64"  ? "(int64_t)"
                           : ty[1] == '3' ? "(uint32_t)"
                                          : "(uint64_t)";
        std::string o = cmp == "eq"   ? "=="
                        : cmp == "ne" ? "!="
                        : cmp == "lt" ? "<"
                        : cmp == "le" ? "<="
                        : cmp == "gt" ? ">"
                                      : ">=";
        return p + " = (" + cast + "(" + x + ") " + o + " " + cast + "(" + y + "));";
    }
    if (std::regex_match(op, m, re_ex2)) { // d = 2^a on .f32 registers (ptx.h: ex2_approx_f32_)
        if (!need(2)) return "";
        std::string d = c.val(a[0]), x = c.val(a[1]);
        if (!c.err.empty()) return "";
        return assign(d, "::cudahost::ptx::ex2_approx_f32_((uint32_t)(" + x + "), " +
                             (m[1].matched ? "true" : "false") + ")");
    }
    if (std::regex_match(op, m, re_bar)) {
        // bar.* is always .aligned; barrier.* only with the qualifier. Barrier 0 without a count: __syncthreads.
        const bool sync = m[3] == "sync", aligned = m[1] == "bar" || m[4].matched;
        if (m[1] == "bar" && m[4].matched) return c.err = "'" + op + "': bar takes no .aligned qualifier", "";
        if (sync ? (a.size() != 1 && a.size() != 2) : a.size() != 2)
            return c.err = "'" + op + "' takes " +
                           (sync ? "a barrier and an optional thread count" : "a barrier and a thread count"),
                   "";
        if (sync && a.size() == 1 && trim(a[0]) == "0") return "::cudahost::ptx::bar_sync_();";
        std::string id = c.val(a[0]), cnt = a.size() == 2 ? c.val(a[1]) : "0";
        if (!c.err.empty()) return "";
        return "::cudahost::ptx::bar_named_(" + lit(op) + ", " + W + ", " + (sync ? "1" : "0") + ", " +
               (aligned ? "1" : "0") + ", (uint32_t)(" + id + "), " + (a.size() == 2 ? "1" : "0") +
               ", (uint32_t)(" + cnt + "));";
    }
    if (std::regex_match(op, m, re_ld) || std::regex_match(op, m, re_st)) {
        bool ld = op[0] == 'l';
        if (!need(2)) return "";
        std::string t = m[2];
        std::string ct = t == "f32" || t == "b32" || t == "u32" || t == "s32" ? "uint32_t"
                         : t[1] == '1'                                        ? "uint16_t"
                                                                              : "uint64_t";
        std::string ad = c.addr(ld ? a[1] : a[0]), r = c.val(ld ? a[0] : a[1]);
        if (!c.err.empty()) return "";
        std::string p = "::cudahost::ptx::smem_decode_(" + ad + ", " + W + ")";
        if (ld)
            return "{ " + ct + " cudahost_t_; std::memcpy(&cudahost_t_, " + p + ", sizeof cudahost_t_); " +
                   assign(r, "cudahost_t_") + " }";
        return "{ " + ct + " cudahost_t_ = (" + ct + ")(" + r + "); std::memcpy(" + p +
               ", &cudahost_t_, sizeof cudahost_t_); }";
    }
    static const std::regex re_prefetch(
        R"(prefetchu?(\.global|\.local)?\.(L1|L2)(::evict_last|::evict_normal)?)");
    if (std::regex_match(op, m,
                         re_prefetch)) { // a cache hint: nothing to do (the address is still evaluated)
        if (!need(1)) return "";
        std::string ad = c.addr(a[0]);
        return ad.empty() ? "" : "(void)" + ad + ";";
    }
    c.err = "not emulated";
    return "";
}

// The whole statement. `where` is "file:line" for messages; `site` makes the error function's name unique.
inline Translation translate(const std::string &tmpl, std::vector<Operand> ops, const std::string &where,
                             int site)
{
    Translation T;
    Ctx c(ops);
    auto fail = [&](const std::string &op, const std::string &why) {
        std::string fn = "cudahost_ptx_not_emulated_" + std::to_string(site) + "_";
        std::string msg = "cudahost: " + where + ": inline PTX" +
                          (op.empty() ? std::string() : " instruction '" + op + "'") +
                          (why == "not emulated" ? " is not emulated in host execution mode" : ": " + why) +
                          "; the emulated instructions are listed in cudahost/README.md (Inline PTX)";
        T.code = "do { extern void " + fn + "() __attribute__((error(" + lit(msg) + "))); " + fn +
                 "(); } while (0)";
        T.problem = msg;
        return T;
    };
    std::string pro, body, epi;
    for (size_t k = 0; k < ops.size(); k++) {
        std::string cs = ops[k].cons;
        std::string letter;
        for (char ch : cs)
            if (ch != '=' && ch != '+' && ch != '&') letter += ch;
        if (letter.size() != 1 || std::string("rfhldn").find(letter) == std::string::npos) {
            return fail("", "operand constraint \"" + cs + "\" is not emulated (r, f, h, l, d and n are)");
        }
        ops[k].cons = letter;
        if (letter == "n") continue;
        std::string ty = letter == "h"                      ? "uint16_t"
                         : (letter == "l" || letter == "d") ? "uint64_t"
                                                            : "uint32_t";
        std::string init =
            (ops[k].out && !ops[k].inout) ? "0" : "::cudahost::ptx::bits<" + ty + ">(" + ops[k].expr + ")";
        pro += ty + " " + c.opname(k) + " = " + init + "; (void)" + c.opname(k) + "; ";
        if (ops[k].out) epi += "::cudahost::ptx::set(" + ops[k].expr + ", " + c.opname(k) + "); ";
    }
    // strip comments
    std::string t;
    for (size_t i = 0; i < tmpl.size(); i++) {
        if (tmpl.compare(i, 2, "//") == 0) {
            while (i < tmpl.size() && tmpl[i] != '\n') i++;
            t += '\n';
            continue;
        }
        if (tmpl.compare(i, 2, "/*") == 0) {
            size_t e = tmpl.find("*/", i + 2);
            i = e == std::string::npos ? tmpl.size() : e + 1;
            t += ' ';
            continue;
        }
        t += tmpl[i];
    }
    size_t i = 0;
    std::vector<std::string> done;
    while (i < t.size()) {
        char ch = t[i];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '{' || ch == '}' || ch == ';') {
            i++;
            continue;
        }
        size_t e = t.find(';', i);
        if (e == std::string::npos) e = t.size();
        std::string st = trim(t.substr(i, e - i));
        i = e + 1;
        if (st.rfind(".reg", 0) == 0) {
            // .reg .type a, b<4>;
            std::string rest = trim(st.substr(4));
            size_t sp = rest.find_first_of(" \t");
            std::string ty = rest.substr(0, sp);
            std::string names = sp == std::string::npos ? "" : rest.substr(sp);
            std::string cty = ty == ".pred"                                                    ? "bool"
                              : (ty == ".b16" || ty == ".u16" || ty == ".s16" || ty == ".f16") ? "uint16_t"
                              : (ty == ".b64" || ty == ".u64" || ty == ".s64" || ty == ".f64") ? "uint64_t"
                                                                                               : "uint32_t";
            for (auto &nm0 : split_top(names)) {
                std::string nm = trim(nm0);
                int count = -1;
                size_t lt = nm.find('<');
                if (lt != std::string::npos) {
                    count = std::atoi(nm.c_str() + lt + 1);
                    nm = nm.substr(0, lt);
                }
                auto decl = [&](const std::string &n) {
                    std::string cn = "cudahost_r_";
                    for (char q : n) cn += (std::isalnum((unsigned char)q) || q == '_') ? q : '_';
                    cn += "_" + std::to_string(c.regs.size()) + "_";
                    c.regs[n] = cn;
                    if (cty == "bool") c.preds[n] = true;
                    pro += cty + " " + cn + " = 0; (void)" + cn + "; ";
                };
                if (count < 0)
                    decl(nm);
                else
                    for (int q = 0; q < count; q++) decl(nm + std::to_string(q));
            }
            continue;
        }
        std::string guard;
        if (st[0] == '@') {
            size_t sp = st.find_first_of(" \t");
            std::string g = st.substr(1, sp - 1);
            bool neg = !g.empty() && g[0] == '!';
            if (neg) g = g.substr(1);
            std::string gv = c.val(g);
            if (gv.empty()) return fail(st.substr(0, sp), c.err);
            guard = std::string("if (") + (neg ? "!" : "") + gv + ") ";
            st = trim(st.substr(sp));
        }
        size_t sp = st.find_first_of(" \t\n");
        std::string op = st.substr(0, sp);
        std::vector<std::string> args =
            sp == std::string::npos ? std::vector<std::string>{} : split_top(st.substr(sp));
        std::string code = instr(c, op, args);
        if (!c.err.empty()) return fail(op, c.err);
        body += guard + code + " ";
    }
    T.code = "do { " + pro + body + epi + "} while (0)";
    return T;
}

} // namespace asmx

#endif
