#ifndef NAVD_CLIBUV_SHIM_H
#define NAVD_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <signal.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef SO_PEERCRED
#define SO_PEERCRED 17
#endif

/// Peer credentials of a connected Unix socket (SO_PEERCRED). Returns 0 on success.
static inline int navuv_peercred(int fd, int *pid, int *uid, int *gid) {
    /* struct ucred without _GNU_SOURCE, which would split the Glibc module. */
    struct { pid_t pid; uid_t uid; gid_t gid; } cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = (int)cred.pid; *uid = (int)cred.uid; *gid = (int)cred.gid;
    return 0;
}

static inline void navuv_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

/// Unblocks every signal on the calling thread. A process started by a thread that blocks
/// signals (test runners, some supervisors) inherits that mask, and libuv's signal handles
/// would then never fire.
static inline void navuv_unblock_signals(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_UNBLOCK, &all, NULL);
}
#include <sys/epoll.h>

/// Whether the loop's descriptors have events ready now (a zero-timeout look at libuv's epoll set,
/// which is level-triggered: the events stay for libuv's own poll).
static inline int navuv_events_ready(uv_loop_t *loop) {
    int fd = uv_backend_fd(loop);
    if (fd < 0) return 0;
    struct epoll_event ev;
    return epoll_wait(fd, &ev, 1, 0) > 0;
}
#include <sys/un.h>
#include <fcntl.h>
#include <errno.h>
#include <string.h>
#include <stddef.h>
#include <unistd.h>

/// What descriptor `fd` is, for a socket a service manager passed (socket activation): its
/// domain, type and whether it listens, and the path it is bound to (`path`, `cap` bytes, NUL
/// terminated; empty when unnamed; `*abstract` set for an abstract address). Marks it
/// close-on-exec, so no child inherits it. Returns 0, or -errno (EBADF: not open; ENOTSOCK).
static inline int navuv_describe_socket(int fd, int *domain, int *type, int *listening, char *path, int cap, int *abstract) {
    socklen_t len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, domain, &len) != 0) return -errno;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, type, &len) != 0) return -errno;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, listening, &len) != 0) return -errno;
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return -errno;
    path[0] = 0;
    *abstract = 0;
    if (*domain != AF_UNIX) return 0;
    struct sockaddr_un sa;
    socklen_t salen = sizeof(sa);
    memset(&sa, 0, sizeof(sa));
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) return -errno;
    size_t n = salen > offsetof(struct sockaddr_un, sun_path) ? salen - offsetof(struct sockaddr_un, sun_path) : 0;
    if (n == 0) return 0;
    if (sa.sun_path[0] == 0) { *abstract = 1; return 0; }
    size_t l = strnlen(sa.sun_path, n);
    if ((int)l >= cap) return -ENAMETOOLONG;
    memcpy(path, sa.sun_path, l);
    path[l] = 0;
    return 0;
}

/// Connects a new non-blocking, close-on-exec Unix stream socket to `path` without waiting: 0 and
/// the socket in `*fd`, or -errno with no socket left open. A listener whose queue of connections
/// not yet accepted is full answers at once with -EAGAIN (where a blocking connect would wait).
static inline int navuv_unix_connect(const char *path, int *fd) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n == 0) return -ENOENT;
    if (n >= sizeof(sa.sun_path)) return -ENAMETOOLONG;
    memcpy(sa.sun_path, path, n);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    int r;
    do { r = connect(s, (struct sockaddr *)&sa, sizeof(sa)); } while (r != 0 && errno == EINTR);
    if (r != 0 && errno != EINPROGRESS) {
        int e = errno;
        close(s);
        return -e;
    }
    *fd = s;
    return 0;
}

/// Sends one datagram `msg` to the service manager's notification socket `addr` (a path, or an
/// abstract address written with a leading `@`), without waiting. Returns 0, or -errno.
static inline int navuv_notify(const char *addr, const char *msg, size_t len) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(addr);
    if (n == 0 || n >= sizeof(sa.sun_path)) return -EINVAL;
    memcpy(sa.sun_path, addr, n);
    int abstract = addr[0] == '@';
    if (abstract) sa.sun_path[0] = 0;
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (abstract ? 0 : 1));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    ssize_t r = sendto(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sa, salen);
    int e = errno;
    close(fd);
    return r < 0 ? -e : 0;
}

#include <stdlib.h>

typedef struct { uv_work_t req; int fd; int *pending; } navuv_close_req;
static inline void navuv_close_work(uv_work_t *req) { close(((navuv_close_req *)req)->fd); }
static inline void navuv_close_done(uv_work_t *req, int status) {
    (void)status;
    navuv_close_req *c = (navuv_close_req *)req;
    *c->pending -= 1;
    free(c);
}

/// Closes `fd` on libuv's thread pool: the last close of a file that is no longer linked frees
/// its pages there (milliseconds for a large one), not on the loop. `*pending` counts the closes
/// not yet done (changed on the loop's thread only). Falls back to closing it here when no
/// request can be made.
static inline void navuv_close_in_background(uv_loop_t *loop, int fd, int *pending) {
    navuv_close_req *c = (navuv_close_req *)malloc(sizeof(navuv_close_req));
    if (c) {
        c->fd = fd;
        c->pending = pending;
        *pending += 1;
        if (uv_queue_work(loop, &c->req, navuv_close_work, navuv_close_done) == 0) return;
        *pending -= 1;
        free(c);
    }
    close(fd);
}

#include <fcntl.h>
#include <errno.h>
#include <string.h>

/// One file of a copy made on the thread pool: the first `length` bytes of `src` (read at their
/// offsets: `src` may be appended to meanwhile), then zeros up to `size`, into a new file `dest`.
typedef struct { int src; long long length; long long size; char *dest; } navuv_copy_file;

typedef struct {
    uv_work_t req;
    navuv_copy_file *files;
    int count;
    char *dir;
    /// errno of the first failure, and the index of its file (`count`: the directory's sync).
    int error;
    int failed;
    void (*done)(void *ctx, int error, int failed);
    void *ctx;
    int *pending;
} navuv_copy_req;

static inline int navuv_copy_one(const navuv_copy_file *f, char *buf, size_t cap) {
    int out = open(f->dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) return errno;
    long long off = 0;
    int e = 0;
    while (off < f->length && !e) {
        size_t want = (size_t)(f->length - off < (long long)cap ? f->length - off : (long long)cap);
        ssize_t n = pread(f->src, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { e = n < 0 ? errno : EIO; break; }
        for (ssize_t w = 0; w < n && !e;) {
            ssize_t m = write(out, buf + w, (size_t)(n - w));
            if (m < 0 && errno == EINTR) continue;
            if (m <= 0) e = m < 0 ? errno : EIO; else w += m;
        }
        off += n;
    }
    if (!e && f->size > f->length && ftruncate(out, (off_t)f->size) != 0) e = errno;
    if (!e && fsync(out) != 0) e = errno;
    if (close(out) != 0 && !e) e = errno;
    return e;
}

static inline void navuv_copy_work(uv_work_t *req) {
    navuv_copy_req *c = (navuv_copy_req *)req;
    size_t cap = 1 << 20;
    char *buf = (char *)malloc(cap);
    c->error = buf ? 0 : ENOMEM;
    c->failed = buf ? -1 : 0;
    int made = 0;
    for (int i = 0; buf && i < c->count && !c->error; i++) {
        int e = navuv_copy_one(&c->files[i], buf, cap);
        if (e) {
            c->error = e;
            c->failed = i;
            if (e != EEXIST) unlink(c->files[i].dest);
        } else {
            made = i + 1;
        }
    }
    free(buf);
    if (!c->error) {
        int d = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d < 0 || fsync(d) != 0) { c->error = errno; c->failed = c->count; }
        if (d >= 0) close(d);
    }
    /* A copy that failed leaves nothing: the files made before it go too. */
    if (c->error) for (int i = 0; i < made; i++) unlink(c->files[i].dest);
    for (int i = 0; i < c->count; i++) close(c->files[i].src);
}

static inline void navuv_copy_done(uv_work_t *req, int status) {
    navuv_copy_req *c = (navuv_copy_req *)req;
    if (status != 0 && !c->error) { c->error = -status; c->failed = 0; }
    *c->pending -= 1;
    c->done(c->ctx, c->error, c->failed);
    for (int i = 0; i < c->count; i++) free(c->files[i].dest);
    free(c->files);
    free(c->dir);
    free(c);
}

/// Copies `count` files on libuv's thread pool (each `files[i]`: `src`'s first `length` bytes, then
/// zeros to `size`, into a new file `dest` of mode 0600, synced), then syncs the directory `dir`;
/// then calls `done(ctx, error, failed)` on the loop's thread: error 0, or the errno of the first
/// failure and the index of its file (`count`: the directory), in which case none of the files is
/// left. Takes the source descriptors (closed when done) and copies the paths. `*pending` counts
/// the copies not yet done, as for closes. Returns 0, or a libuv error (nothing is done, the
/// descriptors are left open).
static inline int navuv_copy_in_background(uv_loop_t *loop, const int *srcs, const long long *lengths, const long long *sizes,
                                           const char *const *dests, int count, const char *dir,
                                           void (*done)(void *, int, int), void *ctx, int *pending) {
    navuv_copy_req *c = (navuv_copy_req *)calloc(1, sizeof(navuv_copy_req));
    if (!c) return UV_ENOMEM;
    c->files = (navuv_copy_file *)calloc((size_t)count, sizeof(navuv_copy_file));
    c->dir = strdup(dir);
    int ok = c->files && c->dir;
    for (int i = 0; ok && i < count; i++) {
        c->files[i] = (navuv_copy_file){srcs[i], lengths[i], sizes[i], strdup(dests[i])};
        if (!c->files[i].dest) ok = 0;
    }
    c->count = count;
    c->done = done;
    c->ctx = ctx;
    c->pending = pending;
    int rc = ok ? uv_queue_work(loop, &c->req, navuv_copy_work, navuv_copy_done) : UV_ENOMEM;
    if (rc != 0) {
        if (c->files) for (int i = 0; i < count; i++) free(c->files[i].dest);
        free(c->files);
        free(c->dir);
        free(c);
        return rc;
    }
    *pending += 1;
    return 0;
}

typedef struct {
    uv_work_t req;
    char *path;
    long long size;
    int error;
    void (*done)(void *ctx, int error);
    void *ctx;
    int *pending;
} navuv_zero_req;

/// Writes `size` zero bytes from the start of `fd` (open for writing), a megabyte at a time, each
/// put on the disk (`sync_file_range`: the data, no journal commit) before the next, so that
/// another thread's synchronous writes meanwhile wait for one megabyte's flush at most rather than
/// the whole file's in one (~50 ms for 20 MiB); then `fdatasync`. Returns 0 or the errno.
static inline int navuv_write_zeros(int fd, long long size) {
    size_t cap = 1 << 20;
    char *zeros = (char *)calloc(1, cap);
    int e = zeros ? 0 : ENOMEM;
    long long off = 0;
    while (!e && off < size) {
        size_t want = (size_t)(size - off < (long long)cap ? size - off : (long long)cap);
        ssize_t n = pwrite(fd, zeros, want, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { e = n < 0 ? errno : EIO; break; }
        syscall(SYS_sync_file_range, fd, (long long)off, (long long)n, 1u | 2u | 4u);
        off += n;
    }
    free(zeros);
    if (!e && fdatasync(fd) != 0) e = errno;
    return e;
}

static inline void navuv_zero_work(uv_work_t *req) {
    navuv_zero_req *z = (navuv_zero_req *)req;
    int out = open(z->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) { z->error = errno; return; }
    int e = navuv_write_zeros(out, z->size);
    if (close(out) != 0 && !e) e = errno;
    if (e) unlink(z->path);
    z->error = e;
}

static inline void navuv_zero_done(uv_work_t *req, int status) {
    navuv_zero_req *z = (navuv_zero_req *)req;
    if (status != 0 && !z->error) z->error = -status;
    *z->pending -= 1;
    z->done(z->ctx, z->error);
    free(z->path);
    free(z);
}

/// Makes a new file `path` (mode 0600; one that exists fails) of `size` zero bytes, written and
/// synced, on libuv's thread pool; then calls `done(ctx, error)` on the loop's thread (0, or the
/// errno; a file that failed is removed). `*pending` counts the jobs not yet done, as for closes.
/// Returns 0, or a libuv error (nothing is done).
static inline int navuv_zero_file_in_background(uv_loop_t *loop, const char *path, long long size,
                                                void (*done)(void *, int), void *ctx, int *pending) {
    navuv_zero_req *z = (navuv_zero_req *)calloc(1, sizeof(navuv_zero_req));
    if (!z) return UV_ENOMEM;
    z->path = strdup(path);
    z->size = size;
    z->done = done;
    z->ctx = ctx;
    z->pending = pending;
    int rc = z->path ? uv_queue_work(loop, &z->req, navuv_zero_work, navuv_zero_done) : UV_ENOMEM;
    if (rc != 0) {
        free(z->path);
        free(z);
        return rc;
    }
    *pending += 1;
    return 0;
}

/// Whether handles closed on `loop` still wait for their close callbacks (the next iteration's end).
static inline int navuv_has_closing_handles(uv_loop_t *loop) { return loop->closing_handles != NULL; }

#include <stdio.h>

typedef struct { char *out; int cap; int used; } navuv_walk_acc;
static inline void navuv_walk_one(uv_handle_t *h, void *arg) {
    navuv_walk_acc *a = (navuv_walk_acc *)arg;
    if (uv_is_closing(h)) return;
    const char *name = uv_handle_type_name(uv_handle_get_type(h));
    int n = snprintf(a->out + a->used, a->cap - a->used, "%s%s%s", a->used ? " " : "", name ? name : "unknown",
                     uv_is_active(h) ? "" : "(inactive)");
    if (n > 0 && a->used + n < a->cap) a->used += n;
}

/// The loop's open handles (not closing), their types separated by spaces, into `out` (`cap` bytes);
/// answers the length written.
static inline int navuv_open_handles(uv_loop_t *loop, char *out, int cap) {
    navuv_walk_acc a = { out, cap, 0 };
    if (cap > 0) out[0] = 0;
    uv_walk(loop, navuv_walk_one, &a);
    return a.used;
}

#endif
