#ifndef NAVD_CSQLITE_SHIM_H
#define NAVD_CSQLITE_SHIM_H
#include <sqlite3.h>
/// SQLITE_TRANSIENT as a function: the macro is a cast Swift cannot import.
static inline void navsql_bind_text(sqlite3_stmt *s, int i, const char *text, int n) {
    sqlite3_bind_text(s, i, text, n, SQLITE_TRANSIENT);
}
/// Binds text SQLite reads in place, without a copy (SQLITE_STATIC): the caller keeps it valid
/// until the statement has been stepped, and binds something else before the text goes.
static inline void navsql_bind_text_in_place(sqlite3_stmt *s, int i, const char *text, int n) {
    sqlite3_bind_text(s, i, text, n, SQLITE_STATIC);
}
/// SQLite set up for a process that uses it from one thread only (navd: its loop's thread), before
/// its first use: no mutexes at all (a connection opened with SQLITE_OPEN_NOMUTEX still takes the
/// global ones, about 20 a commit) and no memory statistics. sqlite3_config is variadic, which
/// Swift cannot call. Returns SQLITE_MISUSE, and changes nothing, once SQLite is initialised.
static inline int navsql_configure_single_thread(void) {
    int rc = sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
    if (rc == SQLITE_OK) rc = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return rc;
}
#endif
