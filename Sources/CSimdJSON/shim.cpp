// The one place navd touches simdjson: parse into simdjson's tape, which Swift reads in place
// (JSONView) or turns into JSONValue. Keeping the interface this narrow lets the JSON library
// change freely. Also the request path's reading of the usual request line (scan_line: its
// envelope by its bytes), of plain params without simdjson (read_plain: the same tape, one pass),
// and of a pipelined read's lines together (a batch: what needs simdjson indexed by one stage 1).
#include "CSimdJSON.h"
#include <simdjson.h>
#include <vector>
#include <cstring>
#include <emmintrin.h>

static_assert(NAVJSON_PADDING >= simdjson::SIMDJSON_PADDING, "NAVJSON_PADDING must cover simdjson's padding");

/// A request line's id and method, read by its bytes (scan_line).
struct navjson_envelope {
    int64_t id;
    const char *method;
    size_t method_len;
};

struct navjson_parser {
    simdjson::dom::parser parser;
    // The id and method of the request line scanned last, as a tape: an integer at word 0 (two
    // words), a string at word 2 (its length, bytes and a zero in `made_strings`; room for 16
    // bytes more, copied in blocks of 16).
    uint64_t made_tape[3];
    uint8_t made_strings[4 + NAVJSON_METHOD_MOST + 16];
    std::vector<char> padded;
    uint32_t configured_depth = 0;
    const char *last_error = "";
    // A batch (navjson_batch_begin): the complete lines [lines_start, lines_end) of a read, read in
    // order. Their plain params need no index (read_plain); from the first line that needs one (a
    // part read_plain does not take, a line not of the scanned form), the lines from there on are
    // scanned (scan_line) and what will be parsed of each (a request's params, any other line
    // whole) copied one after the other into `copies`, each followed by a newline, and indexed
    // there by one stage 1 (index_from); each part is then read from its line's record, by
    // read_plain or by stage 2 alone.
    struct line {
        const char *src;  // the line as framing hands it over
        size_t len;
        int kind;  // scan_line's
        navjson_envelope envelope;
        const char *part;  // what is parsed of it (none for a request without params)
        size_t part_len;
        size_t at;  // where the part's copy starts
    };
    bool in_batch = false;
    bool indexed = false;
    const char *lines_start = nullptr, *lines_end = nullptr;
    std::vector<char> copies;
    std::vector<line> lines;
    size_t next_line = 0;
    uint64_t batched = 0;  // documents parsed by stage 2 alone, for tests
    uint64_t plain = 0;    // documents read by read_plain, for tests
};

extern "C" navjson_parser *navjson_parser_new(void) { return new navjson_parser(); }
extern "C" void navjson_parser_free(navjson_parser *p) { delete p; }
extern "C" const char *navjson_last_error(navjson_parser *p) { return p->last_error; }

static int parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth, bool padded,
                 const uint64_t **tape, const uint8_t **strings);

extern "C" int navjson_parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                             const uint64_t **tape, const uint8_t **strings) {
    return parse(p, data, len, max_depth, false, tape, strings);
}

extern "C" int navjson_parse_padded(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                                    const uint64_t **tape, const uint8_t **strings) {
    return parse(p, data, len, max_depth, true, tape, strings);
}

/// Makes the parser ready for documents of up to `len` bytes nested at most `max_depth` deep.
static __attribute__((noinline)) bool reserve_slow(navjson_parser *p, size_t len, uint32_t max_depth) {
    using namespace simdjson;
    if (p->configured_depth != max_depth || p->parser.capacity() < len) {
        size_t cap = len < 4096 ? 4096 : len;
        if (p->parser.allocate(cap, max_depth) != SUCCESS) {
            p->last_error = "out of memory while parsing";
            return false;
        }
        p->configured_depth = max_depth;
    }
    // The batch path writes the document without parse(), which sizes it.
    if (p->parser.doc.capacity() < p->parser.capacity() && p->parser.doc.allocate(p->parser.capacity()) != SUCCESS) {
        p->last_error = "out of memory while parsing";
        return false;
    }
    return true;
}

static inline bool reserve(navjson_parser *p, size_t len, uint32_t max_depth) {
    if (p->configured_depth == max_depth && p->parser.capacity() >= len && p->parser.doc.capacity() >= p->parser.capacity()) return true;
    return reserve_slow(p, len, max_depth);
}

/// The string whose text starts at s[i] (after its opening quote), when it is plain (printable
/// ASCII but `"` and `\`): its length, bytes and a zero written to `strings` at `sb` (16 bytes at a
/// time, so up to 15 bytes past them; the input is read as far, within its padding), its word to
/// the tape, and `i` moved past its closing quote. False for any other string.
static inline __attribute__((always_inline)) bool plain_string(const char *s, size_t n, size_t &i, uint64_t *tape, size_t &t,
                                                               uint8_t *strings, size_t &sb) {
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7F);
    const size_t start = i;
    uint8_t *out = strings + sb + 4;
    for (;;) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + (i - start)), v);
        // Below 0x20 as signed bytes: the controls and every byte past ASCII.
        const __m128i ends = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                          _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_cmpeq_epi8(v, del)));
        const unsigned m = unsigned(_mm_movemask_epi8(ends));
        if (m) {
            i += size_t(__builtin_ctz(m));
            break;
        }
        i += 16;
        if (i >= n) return false;
    }
    if (i >= n || s[i] != '"') return false;
    const uint32_t len = uint32_t(i - start);
    std::memcpy(strings + sb, &len, 4);
    out[len] = 0;
    tape[t++] = (uint64_t('"') << 56) | sb;
    sb += 5 + len;
    i++;
    return true;
}

/// The deepest nesting read_plain takes (deeper documents are left to simdjson).
static const uint32_t plain_depth_most = 32;

/// Writes the document [s, s + n) (followed by SIMDJSON_PADDING readable bytes) into `tape` and
/// `strings` exactly as simdjson's stage 2 would, when it is plain: objects, arrays, plain strings
/// (plain_string), integers of at most 18 digits (not `-0`), true, false and null, without
/// whitespace, nested less than max_depth (and at most plain_depth_most) deep. False for every
/// other document, valid or not, which simdjson then reads. `tape` holds n + 3 words, `strings`
/// 5n/3 + SIMDJSON_PADDING bytes (simdjson's own sizes). One pass, no index: for the small params
/// of a request, cheaper than simdjson's two stages, whose first costs ~400 instructions however
/// few the bytes.
static bool read_plain(const char *s, size_t n, uint32_t max_depth, uint64_t *tape, uint8_t *strings) {
    uint32_t open[plain_depth_most], counts[plain_depth_most];
    bool object[plain_depth_most];
    uint32_t depth = 0;
    const uint32_t deepest = max_depth - 1 < plain_depth_most ? max_depth - 1 : plain_depth_most;
    if (max_depth == 0) return false;
    size_t t = 1, sb = 0, i = 0;
    for (;;) {
        // A value at s[i].
        if (i >= n) return false;
        char c = s[i];
        if (c == '"') {
            i++;
            if (!plain_string(s, n, i, tape, t, strings, sb)) return false;
        } else if (c == '{' || c == '[') {
            if (depth >= deepest) return false;
            open[depth] = uint32_t(t);
            counts[depth] = 0;
            object[depth] = c == '{';
            depth++;
            t++;
            i++;
            if (i < n && s[i] == (c == '{' ? '}' : ']')) {
                i++;
                goto close;
            }
            if (c == '[') continue;
            goto key;
        } else if (uint8_t(c - '0') < 10 || c == '-') {
            size_t d = i + (c == '-'), first = d;
            int64_t v = 0;
            while (d < n && d - first < 18 && uint8_t(s[d] - '0') < 10) v = v * 10 + (s[d++] - '0');
            if (d == first || (s[first] == '0' && (d - first > 1 || c == '-'))) return false;
            if (d < n && (s[d] == '.' || s[d] == 'e' || s[d] == 'E' || uint8_t(s[d] - '0') < 10)) return false;
            tape[t++] = uint64_t('l') << 56;
            tape[t++] = uint64_t(c == '-' ? -v : v);
            i = d;
        } else if (c == 't' && n - i >= 4 && std::memcmp(s + i, "true", 4) == 0) {
            tape[t++] = uint64_t('t') << 56;
            i += 4;
        } else if (c == 'f' && n - i >= 5 && std::memcmp(s + i, "false", 5) == 0) {
            tape[t++] = uint64_t('f') << 56;
            i += 5;
        } else if (c == 'n' && n - i >= 4 && std::memcmp(s + i, "null", 4) == 0) {
            tape[t++] = uint64_t('n') << 56;
            i += 4;
        } else {
            return false;
        }
    after_value:
        if (depth == 0) break;
        counts[depth - 1]++;
        if (i >= n) return false;
        c = s[i++];
        if (c == ',') {
            if (object[depth - 1]) goto key;
            continue;
        }
        if (c != (object[depth - 1] ? '}' : ']')) return false;
    close : {
        depth--;
        const uint32_t o = open[depth], count = counts[depth];
        const uint64_t kind = object[depth] ? '{' : '[';
        tape[t] = ((object[depth] ? uint64_t('}') : uint64_t(']')) << 56) | o;
        t++;
        tape[o] = (kind << 56) | (uint64_t(count > 0xFFFFFF ? 0xFFFFFF : count) << 32) | t;
    }
        goto after_value;
    key:
        if (i >= n || s[i] != '"') return false;
        i++;
        if (!plain_string(s, n, i, tape, t, strings, sb)) return false;
        if (i >= n || s[i] != ':') return false;
        i++;
    }
    if (i != n) return false;
    tape[0] = (uint64_t('r') << 56) | (t + 1);
    tape[t] = uint64_t('r') << 56;
    return true;
}

/// read_plain into the parser's document (made ready for n bytes first).
static bool parse_plain(navjson_parser *p, const char *s, size_t n, uint32_t max_depth, const uint64_t **tape,
                        const uint8_t **strings) {
    if (!reserve(p, n, max_depth) || !read_plain(s, n, max_depth, p->parser.doc.tape.get(), p->parser.doc.string_buf.get())) return false;
    *tape = p->parser.doc.tape.get();
    *strings = p->parser.doc.string_buf.get();
    p->plain++;
    return true;
}

/// The request line [s, s + n) when it has the form clients write, read by its bytes:
///
///     {"jsonrpc":"2.0","id":N,"method":"NAME"}
///     {"jsonrpc":"2.0","id":N,"method":"NAME","params":VALUE}
///
/// exactly so around an id of digits (`0`, or at most 18 digits without a leading zero), a method
/// of printable ASCII other than `"` and `\` (at most NAVJSON_METHOD_MOST bytes), and JSON
/// whitespace only after the last brace; VALUE must start with `{` or `[` and hold at most
/// max_depth - 2 of them when longer than twice that (it nests one level less than the message
/// may), and the line be followed by padding (`padded`). NAVJSON_SCANNED_PARAMS with the params'
/// bytes in `params`, NAVJSON_SCANNED without params, NAVJSON_NOT_SCANNED for every other line
/// (whose reader parses it whole).
static inline uint64_t load64(const char *p) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    return x;
}

static inline uint32_t load32(const char *p) {
    uint32_t x;
    std::memcpy(&x, p, 4);
    return x;
}

/// Whether the `N` bytes at `p` are `text`'s (N from 8 to 16; compared as two overlapping words).
template <size_t M>
static inline bool equals(const char *p, const char (&text)[M]) {
    constexpr size_t N = M - 1;
    static_assert(N >= 8 && N <= 16, "two words");
    return load64(p) == load64(text) && load64(p + N - 8) == load64(text + N - 8);
}

static inline __attribute__((always_inline)) int scan_line(const char *s, size_t n, bool padded, uint32_t max_depth, navjson_envelope *out,
                     const char **params, size_t *params_len) {
    static const char head_a[] = "{\"jsonrpc\":\"2.0\"";  // the head, `{"jsonrpc":"2.0","id":`,
    static const char head_b[] = ",\"id\":";               // in two parts of 16 and 6 bytes
    static const char method_key[] = ",\"method\":\"";
    static const char params_key[] = ",\"params\":";
    const size_t nh = 22;
    if (n < nh + 1 || !equals(s, head_a) || load32(s + 16) != load32(head_b) || s[20] != head_b[4] || s[21] != head_b[5]) {
        return NAVJSON_NOT_SCANNED;
    }
    // The id: the digits up to the first other byte, eight at a time (bytes past the line are
    // read only when it is padded, and count for nothing), at most 18.
    size_t i = nh;
    int64_t id = 0;
    if (padded || n - i >= 8) {
        const uint64_t x = load64(s + i);
        const uint64_t other = ((x & 0xF0F0F0F0F0F0F0F0ULL) ^ 0x3030303030303030ULL) |
                               (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) ^ 0x3030303030303030ULL);
        size_t digits = other ? size_t(__builtin_ctzll(other)) / 8 : 8;
        if (digits > n - i) digits = n - i;
        if (digits > 0) {
            // The digits as the low bytes of a word of eight (zeros before them), then summed in pairs.
            uint64_t v = (x - 0x3030303030303030ULL) << (8 * (8 - digits));
            v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;
            v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;
            id = int64_t((v * 10000 + (v >> 32)) & 0xFFFFFFFFULL);
        }
        i += digits;
        if (digits == 8) {
            const size_t most = n < nh + 18 ? n : nh + 18;
            while (i < most && uint8_t(s[i] - '0') < 10) id = id * 10 + (s[i++] - '0');
        }
    } else {
        const size_t most = n < nh + 18 ? n : nh + 18;
        while (i < most && uint8_t(s[i] - '0') < 10) id = id * 10 + (s[i++] - '0');
    }
    if (i == nh || (i > nh + 1 && s[nh] == '0')) return NAVJSON_NOT_SCANNED;
    if (n - i < 11 + 2 || !equals(s + i, method_key)) return NAVJSON_NOT_SCANNED;
    i += 11;
    // The method: printable ASCII but `"` and `\`, eight bytes at a time. Each test's lowest flagged
    // byte is a true one (a borrow or carry only flags bytes after it), so the lowest flag of all
    // four is the first byte that ends it.
    const size_t method = i, method_end = n - i < NAVJSON_METHOD_MOST ? n : i + NAVJSON_METHOD_MOST;
    const uint64_t ones = 0x0101010101010101ULL, highs = ones * 0x80;
    for (;;) {
        if (i + 8 > method_end) {
            while (i < method_end) {
                uint8_t c = uint8_t(s[i]);
                if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') break;
                i++;
            }
            break;
        }
        const uint64_t x = load64(s + i);
        const uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        const uint64_t flags = ((x - ones * 0x20) & ~x & highs) | (((x + ones) | x) & highs) | ((q - ones) & ~q & highs) |
                               ((b - ones) & ~b & highs);
        if (flags) {
            i += size_t(__builtin_ctzll(flags)) / 8;
            break;
        }
        i += 8;
    }
    if (i == method || i >= n || s[i] != '"') return NAVJSON_NOT_SCANNED;
    out->id = id;
    out->method = s + method;
    out->method_len = i - method;
    i++;
    size_t end = n;
    while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == '\t')) end--;
    if (end == i || s[end - 1] != '}') return NAVJSON_NOT_SCANNED;
    end--;  // the envelope's own brace
    if (end == i) return NAVJSON_SCANNED;
    if (!padded || end - i < 10 + 2 || !equals(s + i, params_key)) return NAVJSON_NOT_SCANNED;
    size_t from = i + 10;
    if (s[from] != '{' && s[from] != '[') return NAVJSON_NOT_SCANNED;
    // A value nesting d levels takes at least 2d bytes; a longer one is held to the bound by its
    // brackets (quoted ones counted too: a few lines more are parsed whole).
    int64_t deepest = int64_t(max_depth) - 2;
    if (int64_t(end - from) > 2 * deepest) {
        int64_t opened = 0;
        for (size_t j = from; j < end; j++) opened += s[j] == '{' || s[j] == '[';
        if (opened > deepest) return NAVJSON_NOT_SCANNED;
    }
    *params = s + from;
    *params_len = end - from;
    return NAVJSON_SCANNED_PARAMS;
}

extern "C" void navjson_batch_begin(navjson_parser *p, const char *data, size_t len, uint32_t max_depth) {
    p->in_batch = false;
    // Sized for the whole batch now, so that no part read later reallocates the index.
    if (len == 0 || len > NAVJSON_MAX_BATCH || !reserve(p, len + 1, max_depth)) return;
    p->lines_start = data;
    p->lines_end = data + len;
    p->indexed = false;
    p->in_batch = true;
}

extern "C" void navjson_batch_end(navjson_parser *p) { p->in_batch = false; }
extern "C" uint64_t navjson_batched(navjson_parser *p) { return p->batched; }
extern "C" uint64_t navjson_plain(navjson_parser *p) { return p->plain; }

extern "C" int navjson_plain_check(navjson_parser *p, const char *data, size_t len, uint32_t max_depth) {
    using namespace simdjson;
    p->in_batch = false;
    const uint64_t *tape;
    const uint8_t *strings;
    if (!parse_plain(p, data, len, max_depth, &tape, &strings)) return -1;
    size_t words = tape[0] & 0xFFFFFFFFFFFFFFULL;
    std::vector<uint64_t> plain_tape(tape, tape + words);
    std::vector<uint8_t> plain_strings(strings, strings + 5 * len / 3 + 32);
    if (parse(p, data, len, max_depth, true, &tape, &strings) != NAVJSON_OK) return 1;
    if ((tape[0] & 0xFFFFFFFFFFFFFFULL) != words) return 1;
    for (size_t w = 0; w < words; w++) {
        if (tape[w] != plain_tape[w]) return 1;
        const uint8_t type = uint8_t(tape[w] >> 56);
        if (type == 'l' || type == 'u' || type == 'd') {
            w++;
            if (w >= words || tape[w] != plain_tape[w]) return 1;
        } else if (type == '"') {
            const size_t at = tape[w] & 0xFFFFFFFFFFFFFFULL;
            uint32_t n;
            std::memcpy(&n, strings + at, 4);
            if (std::memcmp(strings + at, plain_strings.data() + at, 4 + size_t(n) + 1) != 0) return 1;
        }
    }
    return 0;
}

/// Stage 2 of the next document of the batch, when it is exactly the copied part [from, from + len)
/// of the batch: it starts in the part, ends in it, and the document after it (if any) starts
/// after the part. Then the part's structural characters are those a parse of the part alone would
/// find (stage 1 fails on a raw newline inside a string, and each part is followed by one, so every
/// part starts outside a string), and the result is the same.
static bool parse_in_batch(navjson_parser *p, size_t from, size_t len) {
    using namespace simdjson;
    auto *impl = p->parser.implementation.get();
    size_t to = from + len;
    uint32_t next = impl->next_structural_index, n = impl->n_structural_indexes;
    // Past the parts before this one that were not asked for (read otherwise, or not at all).
    while (next < n && impl->structural_indexes[next] < from) next++;
    impl->next_structural_index = next;
    if (next >= n) return false;
    size_t start = impl->structural_indexes[next];
    if (start >= to) return false;
    if (impl->stage2_next(p->parser.doc) != SUCCESS) return false;
    uint32_t after = impl->next_structural_index;
    size_t last = impl->structural_indexes[after - 1];
    if (last >= to) return false;
    if (after < n) return impl->structural_indexes[after] >= to;
    // The last document indexed: stage 1 of a stream leaves out what follows the last document it
    // judges complete, so the rest of the part is read here. Only an object or array is judged
    // (a scalar's last structural character is its first).
    const char *copies = p->copies.data();
    if (copies[last] != '}' && copies[last] != ']') return false;
    for (size_t i = last + 1; i < to; i++) {
        char c = copies[i];
        if (c != ' ' && c != '\t' && c != '\r') return false;
    }
    return true;
}

/// The indexed batch's line that holds `data` (its lines before it are passed over), or null.
static navjson_parser::line *batch_line(navjson_parser *p, const char *data) {
    if (data < p->lines_start || data >= p->lines_end) return nullptr;
    size_t k = p->next_line, count = p->lines.size();
    while (k < count && p->lines[k].src + p->lines[k].len < data) k++;
    p->next_line = k;
    return k < count && p->lines[k].src <= data ? &p->lines[k] : nullptr;
}

/// Indexes the batch's lines from the one that starts at `from` (see navjson_parser): false, and
/// the batch ends, when `from` is not in the batch or stage 1 fails (one bad part spoils the index
/// of all: the parts are then parsed one by one).
static bool index_from(navjson_parser *p, const char *from, uint32_t max_depth) {
    using namespace simdjson;
    if (from < p->lines_start || from >= p->lines_end || p->configured_depth != max_depth) {
        p->in_batch = false;
        return false;
    }
    const size_t len = size_t(p->lines_end - from);
    // Every part and its newline fit in the lines' own bytes (a line's newline, or its envelope).
    if (p->copies.size() < len + 1 + SIMDJSON_PADDING) p->copies.resize(len + 1 + SIMDJSON_PADDING);
    char *out = p->copies.data();
    size_t n = 0;
    p->lines.clear();
    for (const char *s = from, *end = p->lines_end; s < end;) {
        const char *nl = static_cast<const char *>(std::memchr(s, '\n', size_t(end - s)));
        const char *e = nl ? nl : end;
        if (e > s && e[-1] == '\r') e--;  // a line as framing hands it over
        navjson_parser::line l;
        l.src = s;
        l.len = size_t(e - s);
        l.kind = scan_line(s, l.len, true, max_depth, &l.envelope, &l.part, &l.part_len);
        if (l.kind == NAVJSON_NOT_SCANNED) {
            l.part = s;
            l.part_len = l.len;
        }
        l.at = n;
        if (l.kind != NAVJSON_SCANNED) {
            std::memcpy(out + n, l.part, l.part_len);
            n += l.part_len;
            out[n++] = '\n';
        }
        p->lines.push_back(l);
        s = nl ? nl + 1 : end;
    }
    std::memset(out + n, 0, SIMDJSON_PADDING);
    p->next_line = 0;
    if (n == 0 || p->parser.implementation->stage1(reinterpret_cast<const uint8_t *>(out), n, stage1_mode::streaming_final) != SUCCESS) {
        p->in_batch = false;
        return false;
    }
    p->indexed = true;
    return true;
}

/// Stage 2 of line l's part from the batch's index, handing out the document; the line is then read.
static bool from_index(navjson_parser *p, const navjson_parser::line *l, const uint64_t **tape, const uint8_t **strings) {
    if (!parse_in_batch(p, l->at, l->part_len)) return false;
    p->next_line++;
    *tape = p->parser.doc.tape.get();
    *strings = p->parser.doc.string_buf.get();
    p->batched++;
    return true;
}

/// Stage 2 of [data, data + len) from the batch's index (made now if need be), handing out the
/// document. When the batch holds no such part next (another part of a line, bytes not of its
/// lines, a part out of order) or its index does not serve it, the batch ends and the caller
/// parses alone (which runs stage 1 again, over the index), with the same result.
static bool parse_from_batch(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                             const uint64_t **tape, const uint8_t **strings) {
    if (!p->indexed && !index_from(p, data, max_depth)) return false;
    navjson_parser::line *l = batch_line(p, data);
    if (l && l->kind != NAVJSON_SCANNED && l->part == data && l->part_len == len && p->configured_depth == max_depth &&
        from_index(p, l, tape, strings)) {
        return true;
    }
    p->in_batch = false;
    return false;
}

static int parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth, bool padded,
                 const uint64_t **tape, const uint8_t **strings) {
    using namespace simdjson;
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) i++;
    if (i == len) {
        p->last_error = "the message is empty";
        return NAVJSON_ERR_EMPTY;
    }
    if (p->in_batch && parse_from_batch(p, data, len, max_depth, tape, strings)) return NAVJSON_OK;
    const char *input = data;
    if (!padded) {
        if (p->padded.size() < len + SIMDJSON_PADDING) p->padded.resize(len + SIMDJSON_PADDING);
        std::memcpy(p->padded.data(), data, len);
        std::memset(p->padded.data() + len, 0, SIMDJSON_PADDING);
        input = p->padded.data();
    }
    if (!reserve(p, len, max_depth)) return NAVJSON_ERR_OTHER;
    dom::element root;  // unused: the document is read from the parser's tape
    error_code err = p->parser.parse(input, len, false).get(root);
    if (err != SUCCESS) {
        p->last_error = error_message(err);
        switch (err) {
        case DEPTH_ERROR: return NAVJSON_ERR_DEPTH;
        case UTF8_ERROR: return NAVJSON_ERR_UTF8;
        case EMPTY: return NAVJSON_ERR_EMPTY;
        default: return NAVJSON_ERR_SYNTAX;
        }
    }
    // Swift reads the document from the tape (see JSONView).
    *tape = p->parser.doc.tape.get();
    *strings = p->parser.doc.string_buf.get();
    return NAVJSON_OK;
}

/// The envelope as views read it (navjson_request's envelope tape). `padded`: the method may be
/// copied in blocks of 16 (reading past its end).
static inline void make_envelope(navjson_parser *p, const navjson_envelope &e, bool padded, navjson_request *r) {
    p->made_tape[0] = uint64_t('l') << 56;
    p->made_tape[1] = uint64_t(e.id);
    p->made_tape[2] = uint64_t('"') << 56;
    uint32_t n = uint32_t(e.method_len);
    std::memcpy(p->made_strings, &n, 4);
    if (padded) {
        for (size_t k = 0; k < n; k += 16) std::memcpy(p->made_strings + 4 + k, e.method + k, 16);
    } else {
        std::memcpy(p->made_strings + 4, e.method, n);
    }
    p->made_strings[4 + n] = 0;
    r->envelope_tape = p->made_tape;
    r->envelope_strings = p->made_strings;
}

extern "C" int navjson_scan_request(navjson_parser *p, const char *data, size_t len, int padded, uint32_t max_depth, navjson_request *r) {
    if (p->in_batch && p->indexed) {
        navjson_parser::line *l = batch_line(p, data);
        if (l && l->src == data && l->len == len && (padded || l->kind != NAVJSON_SCANNED_PARAMS)) {
            // Scanned when the batch was indexed.
            const int kind = l->kind;
            if (kind == NAVJSON_NOT_SCANNED) return kind;  // its reader parses it whole, from the index
            make_envelope(p, l->envelope, true, r);
            if (kind == NAVJSON_SCANNED) {
                p->next_line++;
                return kind;
            }
            // (At another depth the parser is made again, and the index with it.)
            if (p->configured_depth == max_depth) {
                if (parse_plain(p, l->part, l->part_len, max_depth, &r->tape, &r->strings)) {
                    p->next_line++;
                    return kind;
                }
                if (from_index(p, l, &r->tape, &r->strings)) return kind;
            }
            p->in_batch = false;
            return parse(p, l->part, l->part_len, max_depth, true, &r->tape, &r->strings) == NAVJSON_OK ? kind : NAVJSON_NOT_SCANNED;
        }
        p->in_batch = false;  // a line out of order: the rest are read alone
    }
    navjson_envelope envelope;
    const char *params;
    size_t params_len;
    const int kind = scan_line(data, len, padded != 0, max_depth, &envelope, &params, &params_len);
    if (kind == NAVJSON_NOT_SCANNED) return kind;  // its reader parses it whole (from the batch's index, made then)
    make_envelope(p, envelope, padded != 0, r);
    if (kind == NAVJSON_SCANNED) return kind;
    // Plain params need no index; others, in a batch, are read from one made from this line on.
    if (parse_plain(p, params, params_len, max_depth, &r->tape, &r->strings)) return kind;
    if (p->in_batch && padded && index_from(p, data, max_depth)) {
        navjson_parser::line *l = batch_line(p, data);
        if (l && l->src == data && l->kind == NAVJSON_SCANNED_PARAMS && l->part == params && from_index(p, l, &r->tape, &r->strings)) return kind;
        p->in_batch = false;
    }
    // An error sends the line to be parsed whole, which tells what is wrong and where.
    return parse(p, params, params_len, max_depth, true, &r->tape, &r->strings) == NAVJSON_OK ? kind : NAVJSON_NOT_SCANNED;
}
