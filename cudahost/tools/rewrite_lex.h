// cudahost-rewrite: the lexical helpers of the rewrite: identifier and white-space characters, comments and
// string/character literals skipped as a whole, newline counts. Included by rewrite.cpp.
#ifndef CUDAHOST_REWRITE_LEX_H
#define CUDAHOST_REWRITE_LEX_H

#include <cstddef>
#include <string>

namespace {

bool is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// If src[i] starts a comment, string literal or character literal, return the index just past it, else i.
size_t skip_literal(const std::string &s, size_t i)
{
    const size_t n = s.size();
    if (i >= n) return i;
    char c = s[i];
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
        size_t j = i + 2;
        while (j < n && s[j] != '\n') {
            if (s[j] == '\\' && j + 1 < n && s[j + 1] == '\n') j++; // continued line comment
            j++;
        }
        return j;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
        size_t e = s.find("*/", i + 2);
        return e == std::string::npos ? n : e + 2;
    }
    if (c == '"') {
        // raw string?  prefix R, LR, uR, UR, u8R directly before the quote
        size_t p = i;
        bool raw = p >= 1 && s[p - 1] == 'R';
        if (raw) {
            size_t q = p - 1; // start of prefix
            while (q > 0 && (s[q - 1] == 'u' || s[q - 1] == 'U' || s[q - 1] == 'L' || s[q - 1] == '8')) q--;
            if (q > 0 && is_ident(s[q - 1])) raw = false; // part of a longer identifier, e.g. FOOR"..."
        }
        if (raw) {
            size_t open = s.find('(', i + 1);
            if (open != std::string::npos && open - i - 1 <= 16) {
                std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
                size_t e = s.find(close, open + 1);
                return e == std::string::npos ? n : e + close.size();
            }
        }
        size_t j = i + 1;
        while (j < n && s[j] != '"' && s[j] != '\n') {
            if (s[j] == '\\') j++;
            j++;
        }
        return j < n ? j + 1 : n;
    }
    if (c == '\'') {
        // digit separator inside a number (1'000, 0xFF'FF)?
        if (i > 0 && is_ident(s[i - 1])) {
            size_t q = i;
            while (q > 0 && (is_ident(s[q - 1]) || s[q - 1] == '\'' || s[q - 1] == '.')) q--;
            if (s[q] >= '0' && s[q] <= '9') return i + 1;
            // character literal prefixes u8'x', L'x' ... fall through
        }
        size_t j = i + 1;
        while (j < n && s[j] != '\'' && s[j] != '\n') {
            if (s[j] == '\\') j++;
            j++;
        }
        return j < n ? j + 1 : n;
    }
    return i;
}

size_t skip_ws_comments(const std::string &s, size_t i)
{
    for (;;) {
        while (i < s.size() && is_space(s[i])) i++;
        if (i + 1 < s.size() && s[i] == '/' && (s[i + 1] == '/' || s[i + 1] == '*')) {
            i = skip_literal(s, i);
            continue;
        }
        if (i + 1 < s.size() && s[i] == '\\' && s[i + 1] == '\n') {
            i += 2;
            continue;
        }
        return i;
    }
}

size_t count_nl(const std::string &s, size_t a, size_t b)
{
    size_t k = 0;
    for (size_t i = a; i < b && i < s.size(); i++) k += s[i] == '\n';
    return k;
}

std::string squeeze(const std::string &t)
{ // collapse whitespace runs (incl. newlines) to one space
    std::string r;
    bool sp = false;
    for (char c : t) {
        if (is_space(c) || c == '\\') {
            sp = true;
            continue;
        }
        if (sp && !r.empty()) r += ' ';
        sp = false;
        r += c;
    }
    return r;
}

} // namespace

#endif
