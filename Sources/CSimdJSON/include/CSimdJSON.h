#ifndef NAVD_CSIMDJSON_H
#define NAVD_CSIMDJSON_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/// Outcome of a parse.
enum {
    NAVJSON_OK = 0,
    NAVJSON_ERR_SYNTAX = 1,
    NAVJSON_ERR_UTF8 = 2,
    NAVJSON_ERR_DEPTH = 3,
    NAVJSON_ERR_EMPTY = 4,
    NAVJSON_ERR_OTHER = 5,
};

/// A reusable parser. Not thread-safe; one per thread.
typedef struct navjson_parser navjson_parser;

navjson_parser *navjson_parser_new(void);
void navjson_parser_free(navjson_parser *p);

/// Parses `len` bytes at `data` (no padding required: they are copied into a padded buffer).
/// On NAVJSON_OK, `*tape` and `*strings` are simdjson's tape and string buffer for the document
/// (the layout simdjson documents as its tape format: word 0 is the root, the value starts at
/// word 1); they stay valid until the next call on the same parser. `max_depth` bounds the
/// nesting of arrays and objects (a scalar document has depth 0).
int navjson_parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                  const uint64_t **tape, const uint8_t **strings);

/// As navjson_parse, for input followed by at least NAVJSON_PADDING readable bytes (whatever they
/// hold): parsed in place, without the copy into a padded buffer.
int navjson_parse_padded(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                         const uint64_t **tape, const uint8_t **strings);

/// The readable bytes navjson_parse_padded needs after its input (simdjson's SIMDJSON_PADDING).
#define NAVJSON_PADDING 64

/// A request line read by navjson_scan_request: its id and method as a tape of their own (the id
/// an integer at word 0, the method a string at word 2), and its params' tape when it has params.
/// All stay valid until the next call on the same parser.
typedef struct {
    const uint64_t *envelope_tape;
    const uint8_t *envelope_strings;
    const uint64_t *tape;
    const uint8_t *strings;
} navjson_request;

/// What navjson_scan_request found.
enum {
    NAVJSON_NOT_SCANNED = 0,    /// not the form: the line is to be parsed whole
    NAVJSON_SCANNED = 1,        /// the form, without params
    NAVJSON_SCANNED_PARAMS = 2, /// the form, its params parsed (the tape and strings are theirs)
};

/// The longest method navjson_scan_request reads.
#define NAVJSON_METHOD_MOST 64

/// Reads the request line of `len` bytes at `data` when it has the form clients write,
///
///     {"jsonrpc":"2.0","id":N,"method":"NAME"}
///     {"jsonrpc":"2.0","id":N,"method":"NAME","params":VALUE}
///
/// exactly so around an id of digits (`0`, or at most 18 digits without a leading zero), a method
/// of printable ASCII other than `"` and `\` (at most NAVJSON_METHOD_MOST bytes), and JSON
/// whitespace only after the last brace: the envelope by its bytes, and VALUE (an object or array
/// nested at most max_depth - 2 levels) parsed alone, in place (`padded`: the line is followed by
/// NAVJSON_PADDING readable bytes; without, a line with params is not scanned). Every other line,
/// and one whose VALUE does not parse, is NAVJSON_NOT_SCANNED: parsed whole, it reads (or is
/// refused) as before.
int navjson_scan_request(navjson_parser *p, const char *data, size_t len, int padded, uint32_t max_depth, navjson_request *request);

/// Reads the lines of `len` bytes at `data` (complete lines, each ending with a newline but
/// perhaps the last, followed by NAVJSON_PADDING readable bytes) for the reads that follow, in
/// order, so that they cost less: a request line's plain params are read in one pass without
/// simdjson in any case; from the first line that needs simdjson (params that are not plain, a
/// line not of the form navjson_scan_request reads, parsed whole), the lines from there on are
/// scanned and what will be parsed of each (a request's params, any other line whole) is copied,
/// one part after the other, and indexed in one pass of simdjson's stage 1, so that each part
/// costs only stage 2. A parse of anything else (bytes not of the lines, a part out of order) or
/// one the index does not serve ends the batch and is parsed alone: the results are those of
/// reading each line alone. Batches longer than NAVJSON_MAX_BATCH are not indexed.
void navjson_batch_begin(navjson_parser *p, const char *data, size_t len, uint32_t max_depth);
/// Ends the batch (the bytes may change after).
void navjson_batch_end(navjson_parser *p);
/// How many documents were parsed from a batch's index (by stage 2 alone) so far.
uint64_t navjson_batched(navjson_parser *p);
/// How many documents were read in one pass, without simdjson (the plain params of a request line:
/// objects, arrays, strings of printable ASCII without escapes, integers of at most 18 digits,
/// true, false, null, no whitespace), so far.
uint64_t navjson_plain(navjson_parser *p);
/// For tests: reads `len` bytes at `data` (followed by NAVJSON_PADDING readable bytes) in that one
/// pass and with simdjson, and compares: -1 when the one pass does not take it, 0 when both wrote
/// the same tape and strings, 1 when they differ (or simdjson refuses what the one pass took).
int navjson_plain_check(navjson_parser *p, const char *data, size_t len, uint32_t max_depth);
#define NAVJSON_MAX_BATCH (1024 * 1024)

/// A short English description of the last error of `p`.
const char *navjson_last_error(navjson_parser *p);

#ifdef __cplusplus
}
#endif
#endif
