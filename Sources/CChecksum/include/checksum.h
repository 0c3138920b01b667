#ifndef NAVD_CHECKSUM_H
#define NAVD_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli) of `n` bytes at `data`, as iSCSI, ext4 and LevelDB use it: the processor's
/// crc32 instruction where it has one (SSE 4.2), else a table a byte at a time.
uint32_t navd_crc32c(const void *data, size_t n);

/// The same, a byte at a time from a table, whatever the processor (what machines without the
/// instruction use; tests compare the two).
uint32_t navd_crc32c_portable(const void *data, size_t n);

/// The CRC-32C of a log record's header fields as the 20 bytes they make little endian: `salt`
/// (8 bytes), `length`, `seq` and `payload_crc` (4 each). The same as navd_crc32c over those
/// bytes, without laying them out first.
uint32_t navd_crc32c_record_header(uint64_t salt, uint32_t length, uint32_t seq, uint32_t payload_crc);

/// The same from the table (tests compare the two).
uint32_t navd_crc32c_record_header_portable(uint64_t salt, uint32_t length, uint32_t seq, uint32_t payload_crc);

/// Fills in the checksums of the log records in the `n` bytes at `records`, each a 16-byte header
/// (u32 length, u32 sequence, u32 payload CRC, u32 header CRC, little endian) and its payload, of
/// a log of salt `salt`: the payload's CRC-32C, then the header's (navd_crc32c_record_header).
/// Returns the bytes sealed: `n`, unless a record's length claims more than follows it (nothing
/// from that record on is touched).
size_t navd_seal_records(void *records, size_t n, uint64_t salt);

/// Copies `n` bytes from `src` to `dst` in increasing address order, 16 bytes a store (a byte at
/// a time at the ends), each store made after the one before: a process killed during the copy
/// leaves `dst` written from its start up to some point and not after it, as a cut `write()`
/// does. `memcpy` promises no order (glibc's vector loop stores a long copy's first 32 bytes
/// last; `rep movsb` may store out of order): a crash in the middle of copying a log's records
/// into its mapped segment left zeros before written bytes, which a restart reads as damage.
void navd_copy_in_order(void *dst, const void *src, size_t n);

#endif
