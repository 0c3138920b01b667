// A one-pass scanner for the documents navd reads most: short requests of a few short strings,
// small integers and shallow objects. simdjson parses in two stages (an index of the structural
// characters, then the tape); on a message of a hundred bytes each stage costs more than reading
// the bytes once. This scanner reads them once and writes the same tape, and leaves every
// document it does not take on, every error among them, to simdjson (scanner.h says which).
#include "scanner.h"
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Every step is inlined into one function, so that the scanner's state stays in registers.
#define NAVJSON_INLINE __attribute__((always_inline)) inline

namespace {

constexpr uint64_t tape_word(char type, uint64_t payload) { return (uint64_t(uint8_t(type)) << 56) | payload; }

/// JSON's four whitespace bytes.
struct SpaceTable {
    uint8_t is[256];
    constexpr SpaceTable() : is{} { is[' '] = is['\t'] = is['\n'] = is['\r'] = 1; }
};
constexpr SpaceTable space{};

#if defined(__SSE2__)
/// How many bytes a string's run reads at a time.
constexpr size_t run_width = 16;

/// Copies `run_width` bytes from `p` to `dst`, and returns how many of them, from the first, a
/// string holds as they are: up to a '"', a '\\', a control character or a byte of a multi-byte
/// character (the last two are the bytes below 0x20 read as signed); `run_width` if none.
NAVJSON_INLINE size_t plain_run(const uint8_t *p, uint8_t *dst) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), v);
    __m128i ends = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
    return size_t(__builtin_ctz(uint32_t(_mm_movemask_epi8(ends)) | (1u << run_width)));
}
#else
constexpr size_t run_width = 8;

/// As the SSE2 version, eight bytes at a time in a 64-bit word (the first in the low byte, on the
/// little-endian machines navd runs on). Each test flags its first byte exactly (a borrow only
/// runs above a byte it flags), so the lowest flag of all is the first byte that ends the run.
NAVJSON_INLINE size_t plain_run(const uint8_t *p, uint8_t *dst) {
    constexpr uint64_t ones = 0x0101010101010101ULL;
    constexpr uint64_t highs = 0x8080808080808080ULL;
    uint64_t w;
    std::memcpy(&w, p, 8);
    std::memcpy(dst, &w, 8);
    uint64_t quote = w ^ (ones * '"');
    uint64_t backslash = w ^ (ones * '\\');
    uint64_t m = (((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((w - ones * 0x20) & ~w) | w) & highs;
    return m ? size_t(__builtin_ctzll(m)) >> 3 : 8;
}
#endif

/// The length of the well-formed UTF-8 character at `p` (its first byte at least 0x80), or 0: the
/// same bytes simdjson's validation refuses (overlong forms, surrogates, past U+10FFFF).
NAVJSON_INLINE size_t utf8_length(const uint8_t *p, const uint8_t *end) {
    auto cont = [](uint8_t b) { return (b & 0xC0) == 0x80; };
    uint8_t c = p[0];
    size_t n = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    if (n == 0 || size_t(end - p) < n) return 0;
    uint8_t c1 = p[1];
    if (!cont(c1)) return 0;
    if (n == 3) {
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || !cont(p[2])) return 0;
    } else if (n == 4) {
        if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90) || !cont(p[2]) || !cont(p[3])) return 0;
    }
    return n;
}

/// The scanner's state; every step is inlined into `navjson_scan`, where it lives in registers.
///
/// Bounds. The buffers are checked once, before the scan (see navjson_scan), not at each write:
/// - the tape: every value writes one word per byte it takes, but for an integer, which writes two
///   and may take one; the separator that must follow it takes a byte and writes none. So at any
///   time at most the bytes read + 3 words are written: the root's two and one integer's second.
/// - the strings: a string of k bytes takes k + 2 bytes of the document, and one more for what
///   must follow it (all but the last), and writes k + 5 (length and NUL): at most 5/3 of the
///   document's length + 5 in all, and each run's copy may write `run_width` bytes past the last.
///
/// Reads. Within an array or object, the document's last byte other than whitespace is a closing
/// bracket (checked before the scan), which no string, number or literal takes: only closing its
/// container reads it. So while a container is open and that byte has not been read, the byte
/// at `p` is in the document, and the scan reads it without comparing `p` with `end`. Strings,
/// numbers and literals compare (a root value has no such byte after it), and read at most
/// `run_width` bytes past `end` (into the padding).
struct Scanner {
    const uint8_t *p;
    const uint8_t *const end;
    uint64_t *const tape;
    uint64_t *t;
    uint8_t *const strings;
    uint8_t *s;
    /// In a document that is an array or object: its last byte other than whitespace.
    const uint8_t *last = nullptr;

    /// Past any whitespace. Most calls find none: one look at the byte decides (at `end` it is a
    /// padding byte, read but never taken).
    NAVJSON_INLINE void skip_space() {
        if (__builtin_expect(*p > ' ', 1)) return;
        while (p < end && space.is[*p]) p++;
    }

    /// The string whose opening quote is at `p`: its word on the tape, its length, bytes (escapes
    /// undone) and a NUL in the string buffer, as simdjson writes them.
    NAVJSON_INLINE bool string() {
        *t++ = tape_word('"', uint64_t(s - strings));
        uint8_t *dst = s + 4;
        p++;
        for (;;) {
            size_t n = plain_run(p, dst);
            p += n;
            dst += n;
            if (p >= end) return false;
            if (n == run_width) continue;
            uint8_t c = *p;
            if (c == '"') break;
            if (c == '\\') {
                if (end - p < 2) return false;
                uint8_t e;
                switch (p[1]) {
                case '"': e = '"'; break;
                case '\\': e = '\\'; break;
                case '/': e = '/'; break;
                case 'b': e = '\b'; break;
                case 'f': e = '\f'; break;
                case 'n': e = '\n'; break;
                case 'r': e = '\r'; break;
                case 't': e = '\t'; break;
                default: return false;  // \u (and its surrogate pairs) is simdjson's; anything else an error
                }
                *dst++ = e;
                p += 2;
                continue;
            }
            if (c < 0x20) return false;
            size_t k = utf8_length(p, end);
            if (k == 0) return false;
            for (size_t i = 0; i < k; i++) dst[i] = p[i];
            p += k;
            dst += k;
        }
        uint32_t length = uint32_t(dst - (s + 4));
        std::memcpy(s, &length, 4);
        *dst = 0;
        s = dst + 1;
        p++;
        return true;
    }

    /// An integer written plainly (`0`, or up to 18 digits not starting with 0, either after a
    /// minus sign): below 10^18, so it fits 64 bits whatever it is. A fraction, an exponent or a
    /// 19th digit is left to simdjson by the check of what follows a value.
    NAVJSON_INLINE bool number() {
        const uint8_t *q = p;
        bool negative = *q == '-';
        q += negative;
        if (q >= end) return false;
        uint64_t v;
        if (*q == '0') {
            if (negative) return false;  // -0 is simdjson's (a double)
            v = 0;
            q++;
        } else if (unsigned(*q - '1') < 9u) {
            v = uint64_t(*q++ - '0');
            const uint8_t *last = end - q < 17 ? end : q + 17;
            while (q < last && unsigned(*q - '0') < 10u) v = v * 10 + uint64_t(*q++ - '0');
        } else {
            return false;
        }
        *t++ = tape_word('l', 0);
        *t++ = negative ? uint64_t(0) - v : v;
        p = q;
        return true;
    }

    NAVJSON_INLINE bool literal(const char *text, size_t n, char type) {
        if (size_t(end - p) < n || std::memcmp(p, text, n) != 0) return false;
        *t++ = tape_word(type, 0);
        p += n;
        return true;
    }

    /// `limit`: the deepest nesting taken on (at most NAVJSON_SCAN_MAX_DEPTH).
    NAVJSON_INLINE bool scan(const uint32_t limit) {
        // Each open array or object: where its first word goes, how many values or members it has.
        uint32_t open_at[NAVJSON_SCAN_MAX_DEPTH];
        uint32_t counts[NAVJSON_SCAN_MAX_DEPTH];
        bool is_array[NAVJSON_SCAN_MAX_DEPTH];
        uint32_t depth = 0;
        skip_space();
        if (p >= end) return false;
        if (*p == '{' || *p == '[') {
            // The last byte other than whitespace closes a container (see Reads above).
            last = end - 1;
            while (space.is[*last]) last--;
            if (*last != '}' && *last != ']') return false;
        }
        t = tape + 1;  // word 0 is the root's, written last
    value:
        if (__builtin_expect(*p == '"', 1)) {
            if (!string()) return false;
        } else if (*p == '{' || *p == '[') {
            if (depth >= limit) return false;
            bool array = *p == '[';
            open_at[depth] = uint32_t(t - tape);
            counts[depth] = 1;
            is_array[depth] = array;
            depth++;
            t++;
            p++;
            skip_space();
            if (*p == (array ? ']' : '}')) {
                counts[depth - 1] = 0;
                p++;
                goto close;
            }
            if (array) goto value;
            goto key;
        } else if (*p == 't') {
            if (!literal("true", 4, 't')) return false;
        } else if (*p == 'f') {
            if (!literal("false", 5, 'f')) return false;
        } else if (*p == 'n') {
            if (!literal("null", 4, 'n')) return false;
        } else if (!number()) {
            return false;
        }
    after:
        skip_space();
        if (depth == 0) {
            if (p != end) return false;
            *t++ = tape_word('r', 0);
            tape[0] = tape_word('r', uint64_t(t - tape));
            return true;
        }
        {
            uint8_t c = *p++;
            bool array = is_array[depth - 1];
            if (c == ',') {
                counts[depth - 1]++;
                skip_space();
                if (array) goto value;
                goto key;
            }
            if (c != (array ? ']' : '}')) return false;
        }
    close: {
        depth--;
        bool array = is_array[depth];
        uint32_t at = open_at[depth];
        *t++ = tape_word(array ? ']' : '}', at);
        uint64_t count = counts[depth] > 0xFFFFFF ? 0xFFFFFF : counts[depth];
        tape[at] = tape_word(array ? '[' : '{', uint64_t(t - tape) | (count << 32));
        // The last closing bracket read with a container still open: nothing of the document is left.
        if (depth > 0 && p > last) return false;
        goto after;
    }
    key:
        // At a member's key: the key, a colon, then the value.
        if (*p != '"' || !string()) return false;
        skip_space();
        if (*p != ':') return false;
        p++;
        skip_space();
        goto value;
    }
};

}  // namespace

bool navjson_scan(const uint8_t *data, size_t len, uint32_t max_depth, uint64_t *tape, size_t tape_words,
                  uint8_t *strings, size_t string_bytes) {
    // The buffers' sizes, checked once (see Bounds above).
    if (tape_words < len + 3 || string_bytes < 5 * len / 3 + 32) return false;
    uint32_t limit = max_depth < 2 ? 0 : max_depth - 2 < NAVJSON_SCAN_MAX_DEPTH ? max_depth - 2 : NAVJSON_SCAN_MAX_DEPTH;
    // Computed here, once: without the barrier the compiler computes it again at every value.
    __asm__("" : "+r"(limit));
    Scanner scanner{data, data + len, tape, tape, strings, strings};
    return scanner.scan(limit);
}
