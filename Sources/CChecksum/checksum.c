#include "checksum.h"

static uint32_t table[256];
static int table_ready;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    table_ready = 1;
}

static uint32_t crc32c_table(const unsigned char *p, size_t n) {
    if (!table_ready) make_table();
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t navd_crc32c_portable(const void *data, size_t n) { return crc32c_table((const unsigned char *)data, n); }

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(const unsigned char *p, size_t n) {
    uint64_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t v;
        __builtin_memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    if (n >= 4) {
        uint32_t v;
        __builtin_memcpy(&v, p, 4);
        c32 = __builtin_ia32_crc32si(c32, v);
        p += 4;
        n -= 4;
    }
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}

__attribute__((target("sse4.2"))) static uint32_t record_header_sse42(uint64_t salt, uint32_t length, uint32_t seq, uint32_t payload_crc) {
    uint32_t c = (uint32_t)__builtin_ia32_crc32di(0xFFFFFFFFu, salt);
    c = __builtin_ia32_crc32si(c, length);
    c = __builtin_ia32_crc32si(c, seq);
    c = __builtin_ia32_crc32si(c, payload_crc);
    return c ^ 0xFFFFFFFFu;
}
#endif

static int has_sse42(void) {
#if defined(__x86_64__)
    static int known = -1;
    if (known < 0) known = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    return known;
#else
    return 0;
#endif
}

static void put_le(unsigned char *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * i));
}

uint32_t navd_crc32c_record_header_portable(uint64_t salt, uint32_t length, uint32_t seq, uint32_t payload_crc) {
    unsigned char b[20];
    put_le(b, salt, 8);
    put_le(b + 8, length, 4);
    put_le(b + 12, seq, 4);
    put_le(b + 16, payload_crc, 4);
    return crc32c_table(b, 20);
}

uint32_t navd_crc32c_record_header(uint64_t salt, uint32_t length, uint32_t seq, uint32_t payload_crc) {
#if defined(__x86_64__)
    if (has_sse42()) return record_header_sse42(salt, length, seq, payload_crc);
#endif
    return navd_crc32c_record_header_portable(salt, length, seq, payload_crc);
}

uint32_t navd_crc32c(const void *data, size_t n) {
#if defined(__x86_64__)
    if (has_sse42()) return crc32c_sse42((const unsigned char *)data, n);
#endif
    return crc32c_table((const unsigned char *)data, n);
}

// (One load or store each where the host is little endian: the compiler folds the shifts.)
static uint32_t get_le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void put_le32(unsigned char *b, uint32_t v) { put_le(b, v, 4); }

size_t navd_seal_records(void *records, size_t n, uint64_t salt) {
    unsigned char *b = (unsigned char *)records;
    size_t at = 0;
    while (n - at >= 16) {
        uint32_t length = get_le32(b + at), seq = get_le32(b + at + 4);
        if (length > n - at - 16) break;
        uint32_t crc = navd_crc32c(b + at + 16, length);
        put_le32(b + at + 8, crc);
        put_le32(b + at + 12, navd_crc32c_record_header(salt, length, seq, crc));
        at += 16 + (size_t)length;
    }
    return at;
}

typedef uint64_t navd_block __attribute__((vector_size(16), aligned(1)));

void navd_copy_in_order(void *dst, const void *src, size_t n) {
    // Volatile stores: the compiler keeps each one, in this order, and makes no memcpy of them.
    volatile unsigned char *d = (volatile unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    while (n > 0 && ((uintptr_t)d & 15) != 0) {
        *d++ = *s++;
        n--;
    }
    volatile navd_block *b = (volatile navd_block *)(void *)d;
    while (n >= 32) {
        navd_block x, y;
        __builtin_memcpy(&x, s, 16);
        __builtin_memcpy(&y, s + 16, 16);
        b[0] = x;
        b[1] = y;
        b += 2;
        s += 32;
        n -= 32;
    }
    if (n >= 16) {
        navd_block x;
        __builtin_memcpy(&x, s, 16);
        *b++ = x;
        s += 16;
        n -= 16;
    }
    d = (volatile unsigned char *)(void *)b;
    while (n > 0) {
        *d++ = *s++;
        n--;
    }
}
