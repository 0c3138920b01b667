#ifndef NAVD_CLIBUV_SHIM_H
#define NAVD_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <signal.h>
#include <pthread.h>
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
#endif
