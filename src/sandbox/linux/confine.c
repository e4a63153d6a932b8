/*
 * The native half of relay's built-in Linux sandbox, compiled at run time by Bun's embedded
 * TinyCC (bun:ffi cc), so no system compiler or header is needed: every type and constant is
 * declared here. TypeScript decides the policy (Landlock rules, the seccomp BPF program, the
 * paths to keep read-only); this file only applies it and execs.
 *
 * The usual path needs no C (confine-ffi.ts confines the helper in place). This file covers
 * what needs a forked child:
 *   relay_spawn_ns       fork a single-threaded child (unshare(CLONE_NEWUSER) refuses a
 *                        threaded caller), give it a user + mount namespace, bind the
 *                        protected paths read-only, confine and exec; the parent waits,
 *                        forwards signals and mirrors the child's exit.
 *   relay_probe_userns   whether such a namespace can be made here at all.
 *   relay_start_container
 *                        clone the init of the executor's container: a user, pid and mount
 *                        namespace with its own /proc, which sandboxed commands join, so
 *                        that none of them outlives the executor (see container.ts).
 * Errors come back as -(stage * 1000 + errno) so the caller can say which step failed.
 */
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;

long syscall(long n, ...);
int *__errno_location(void);
int open(const char *path, int flags, ...);
int close(int fd);
long read(int fd, void *buf, unsigned long n);
long write(int fd, const void *buf, unsigned long n);
int pipe2(int fds[2], int flags);
int fork(void);
int vfork(void);
void _exit(int code);
int getpid(void);
unsigned getuid(void);
unsigned getgid(void);
int kill(int pid, int sig);
int waitpid(int pid, int *status, int options);
int unshare(int flags);
int mount(const char *src, const char *dst, const char *type, unsigned long flags, const void *data);
int prctl(int op, unsigned long a, unsigned long b, unsigned long c, unsigned long d);
int execve(const char *path, char *const argv[], char *const envp[]);
typedef void (*sighandler_t)(int);
sighandler_t signal(int sig, sighandler_t handler);
int raise(int sig);
int sigprocmask(int how, const void *set, void *old);
int dup2(int from, int to);
int setns(int fd, int nstype);
int chdir(const char *path);
int setsid(void);
long readlinkat(int dirfd, const char *path, char *buf, unsigned long n);
int socketpair(int domain, int type, int protocol, int fds[2]);
long sendmsg(int fd, const void *msg, int flags);
long recvmsg(int fd, void *msg, int flags);
int poll(void *fds, unsigned long n, int timeout);
int waitid(int idtype, unsigned id, void *info, int options);
int clock_gettime(int clock, void *ts);
int fcntl(int fd, int cmd, ...);
int signalfd(int fd, const void *mask, int flags);

#define O_RDONLY 0
#define O_WRONLY 1
#define O_CLOEXEC 02000000
#define O_PATH 010000000
#define EINTR 4
#define ENOENT 2
#define EACCES 13
#define ENOTDIR 20
#define PR_SET_NO_NEW_PRIVS 38
#define PR_SET_PDEATHSIG 1
#define PR_SET_SECCOMP 22
#define SECCOMP_MODE_FILTER 2
#define CLONE_NEWNS 0x00020000
#define CLONE_NEWUSER 0x10000000
#define CLONE_NEWPID 0x20000000
#define SIGCHLD 17
#define MS_NOSUID 2
#define MS_NODEV 4
#define MS_NOEXEC 8
#define MS_SLAVE (1 << 19)
#define O_RDWR 2
#define SYS_CLOSE_RANGE 436
/* The same number on every architecture. */
#define SYS_PIDFD_OPEN 434
#define CLOSE_RANGE_CLOEXEC 4
#define MS_BIND 4096
#define MS_REC 16384
#define MS_PRIVATE (1 << 18)
#define AT_FDCWD -100
#define AT_RECURSIVE 0x8000
#define MOUNT_ATTR_RDONLY 1
#define SYS_MOUNT_SETATTR 442
#define SYS_LANDLOCK_CREATE_RULESET 444
#define SYS_LANDLOCK_ADD_RULE 445
#define SYS_LANDLOCK_RESTRICT_SELF 446
#define LANDLOCK_RULE_PATH_BENEATH 1
#define SIGINT 2
#define SIGQUIT 3
#define SIGKILL 9
#define SIGSTOP 19
#define SIG_SETMASK 2
#define SIGTERM 15
#define SIGHUP 1
#define SIGUSR1 10
#define SIGUSR2 12
#define SIG_IGN ((sighandler_t)1)
#define SIG_DFL ((sighandler_t)0)
#define SIG_ERR ((sighandler_t)-1)

/* Stages, reported in errors (keep in sync with stages.ts). */
#define ST_NO_NEW_PRIVS 1
#define ST_RULESET 2
#define ST_OPEN_RULE_PATH 3
#define ST_ADD_RULE 4
#define ST_RESTRICT 5
#define ST_SECCOMP 6
#define ST_EXECVE 7
#define ST_PIPE 8
#define ST_FORK 9
#define ST_UNSHARE 10
#define ST_ID_MAP 11
#define ST_MOUNT_PRIVATE 12
#define ST_BIND 13
#define ST_READ_ONLY 14
#define ST_CLONE 15
#define ST_MOUNT_PROC 16
#define ST_JOIN 17
#define ST_STDIO 19
#define ST_CWD 20
#define ST_HOST_PID 21
#define ST_HIDE_SOCKET 24

struct ruleset_attr { u64 handled_fs; u64 handled_net; u64 scoped; };
struct path_beneath_attr { u64 allowed; int parent_fd; } __attribute__((packed));
struct mount_attr { u64 set; u64 clr; u64 propagation; u64 userns_fd; };
struct sock_fprog { u16 len; void *filter; };

static int fail(int stage) { return -(stage * 1000 + *__errno_location()); }

/* What the container's init keeps for a command (int kept[3]; -1: none, made by the child). */
#define KEPT_RULESET 0
#define KEPT_USER_NS 1
#define KEPT_MNT_NS 2

#define AT_EMPTY_PATH 0x1000
#define STATX_INO 0x100
/* struct statx: stx_ino at byte 32, stx_dev_major and stx_dev_minor at 136 and 140. */
#define STATX_INO_AT 32
#define STATX_DEV_AT 136

/*
 * The device and inode of `path` at `dirfd` (following symlinks, as open does) into id[0..1]
 * through statx (its number on this CPU: statx_nr, since libc's stat wrappers differ between
 * versions and TinyCC links whatever libc is there). 0, or -1 with errno set.
 */
static int file_id(int dirfd, const char *path, int flags, long statx_nr, unsigned char *stx, u64 *id) {
  if (syscall(statx_nr, dirfd, path, flags, STATX_INO, stx) != 0) return -1;
  id[0] = ((u64) * (u32 *)(stx + STATX_DEV_AT) << 32) | *(u32 *)(stx + STATX_DEV_AT + 4);
  id[1] = *(u64 *)(stx + STATX_INO_AT);
  return 0;
}

/*
 * Makes a Landlock ruleset with one rule per path (NULL-terminated rule_paths, one access mask
 * each). With `ids`, each rule path's device and inode (as statx gives them, two u64 per path)
 * are stored there, so that the container's init can keep the ruleset, hand it to every
 * command under the same rules (relay_spawn_child's kept[KEPT_RULESET]) and check it against
 * its paths first (relay_paths_current). Returns the ruleset's fd (close-on-exec) or a negative
 * stage error.
 */
long relay_build_ruleset(u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                         char **rule_paths, u64 *rule_access, u64 *ids, long statx_nr) {
  struct ruleset_attr attr;
  struct path_beneath_attr rule;
  unsigned char stx[256];
  int ruleset, i, fd;
  attr.handled_fs = handled_fs;
  attr.handled_net = handled_net;
  attr.scoped = scoped;
  ruleset = (int)syscall(SYS_LANDLOCK_CREATE_RULESET, &attr, (unsigned long)attr_size, 0);
  if (ruleset < 0) return fail(ST_RULESET);
  for (i = 0; rule_paths[i]; i++) {
    fd = open(rule_paths[i], O_PATH | O_CLOEXEC);
    if (fd < 0) { int e = fail(ST_OPEN_RULE_PATH); close(ruleset); return e; }
    if (ids && file_id(fd, "", AT_EMPTY_PATH, statx_nr, stx, ids + 2 * i) != 0) {
      int e = fail(ST_OPEN_RULE_PATH); close(fd); close(ruleset); return e;
    }
    rule.allowed = rule_access[i];
    rule.parent_fd = fd;
    if (syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
      int e = fail(ST_ADD_RULE); close(fd); close(ruleset); return e;
    }
    close(fd);
  }
  return ruleset;
}

/*
 * Confines the calling thread. rule_paths is NULL-terminated with one access mask per path;
 * attr_size is 8, 16 or 24 bytes as the running Landlock ABI knows. `ruleset` >= 0 is one
 * already built for exactly these rules (and still current: relay_paths_current), else the
 * ruleset is built here. bpf may be NULL. Integers are passed as 64-bit values: 32-bit
 * arguments on the stack came through bun:ffi as 0.
 */
static int confine(u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                   char **rule_paths, u64 *rule_access, void *bpf, long bpf_len, long ruleset) {
  struct sock_fprog prog;
  int own = ruleset < 0;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(ST_NO_NEW_PRIVS);
  if (handled_fs || handled_net || scoped) {
    if (own && (ruleset = relay_build_ruleset(handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, 0, -1)) < 0)
      return (int)ruleset;
    if (syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0) {
      int e = fail(ST_RESTRICT);
      if (own) close((int)ruleset);
      return e;
    }
    if (own) close((int)ruleset);
  }
  if (bpf && bpf_len > 0) {
    prog.len = (u16)bpf_len;
    prog.filter = bpf;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (unsigned long)&prog, 0, 0) != 0) return fail(ST_SECCOMP);
  }
  return 0;
}

/*
 * 1 when every path still names the file it named when what the init keeps for it was made
 * (ids from relay_build_ruleset or relay_build_namespaces), so that one made now would be the
 * same; else 0. A Landlock rule or a bind holds on to the inode it was made from: after a
 * rename that inode may be somewhere the policy does not name, so what was made for paths
 * that moved is made again, never reused.
 */
long relay_paths_current(char **paths, u64 *ids, long statx_nr) {
  unsigned char stx[256];
  u64 id[2];
  int i;
  for (i = 0; paths[i]; i++) {
    /* {0, 0}: the path named nothing then (a listed socket already unlinked), and must not now. */
    if (file_id(AT_FDCWD, paths[i], 0, statx_nr, stx, id) != 0) {
      if (ids[2 * i] == 0 && ids[2 * i + 1] == 0) continue;
      return 0;
    }
    if (id[0] != ids[2 * i] || id[1] != ids[2 * i + 1]) return 0;
  }
  return 1;
}

/*
 * Set in the container's init by relay_init_signals: no signal is ignored there, so execve
 * alone gives a command the default dispositions and a child only clears its signal mask.
 */
static int no_ignored_signals = 0;

/*
 * Dispositions the runtime ignores (Bun: SIGPIPE, SIGXFSZ) and its signal mask survive execve;
 * the command gets the defaults a shell gives instead.
 */
static void reset_signals(void) {
  unsigned char empty[128];
  int sig;
  for (sig = 0; sig < 128; sig++) empty[sig] = 0;
  for (sig = 1; sig <= 64 && !no_ignored_signals; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == 32 || sig == 33) continue;
    signal(sig, SIG_DFL);
  }
  sigprocmask(SIG_SETMASK, empty, 0);
}

static void swallow(int sig) { (void)sig; }

/* A signal whose own fault raises it again: a handler that returns would fault forever. */
static int is_fault_signal(int sig) {
  return sig == 4 /* ILL */ || sig == 5 /* TRAP */ || sig == 7 /* BUS */ || sig == 8 /* FPE */ ||
         sig == 11 /* SEGV */ || sig == 31 /* SYS */;
}

/*
 * The init's dispositions: every signal it may be sent is caught by a handler that does
 * nothing (as pid 1 it would drop those it does not handle from inside its namespace anyway),
 * instead of ignored, because execve resets a caught signal to its default but keeps an ignored
 * one ignored: each command would otherwise need about sixty sigaction calls before its execve.
 * Fault signals keep their default (a real fault ends the init, which ends the container).
 * SIGCHLD stays default: the init blocks it and reads it from a signalfd. 0, or -errno.
 */
int relay_init_signals(void) {
  int sig;
  for (sig = 1; sig <= 64; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == 32 || sig == 33) continue;
    if (signal(sig, is_fault_signal(sig) ? SIG_DFL : swallow) == SIG_ERR) return -*__errno_location();
  }
  no_ignored_signals = 1;
  return 0;
}

static int confine_exec(char *path, char **argv, char **envp,
                       u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                       char **rule_paths, u64 *rule_access, void *bpf, long bpf_len, long ruleset) {
  int r = confine(handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, bpf, bpf_len, ruleset);
  if (r != 0) return r;
  reset_signals();
  execve(path, argv, envp);
  return fail(ST_EXECVE);
}

static int write_file(const char *path, const char *text, int len) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  long n;
  if (fd < 0) return -1;
  n = write(fd, text, (unsigned long)len);
  close(fd);
  return n == len ? 0 : -1;
}

static int format_map(char *out, unsigned id) {
  /* "<id> <id> 1\n": the caller's own id, the only mapping an unprivileged process may write. */
  char digits[12];
  int n = 0, len = 0, i, k;
  do { digits[n++] = (char)('0' + id % 10); id /= 10; } while (id);
  for (k = 0; k < 2; k++) {
    for (i = n - 1; i >= 0; i--) out[len++] = digits[i];
    out[len++] = ' ';
  }
  out[len++] = '1';
  out[len++] = '\n';
  return len;
}

/* The id maps of a user namespace this process has just made: its own ids, nothing else. */
static int map_ids(unsigned uid, unsigned gid) {
  char map[32];
  int len;
  if (write_file("/proc/self/setgroups", "deny", 4) != 0) return fail(ST_ID_MAP);
  len = format_map(map, uid);
  if (write_file("/proc/self/uid_map", map, len) != 0) return fail(ST_ID_MAP);
  len = format_map(map, gid);
  if (write_file("/proc/self/gid_map", map, len) != 0) return fail(ST_ID_MAP);
  return 0;
}

/*
 * A mount namespace of the command's own with the protected paths read-only, in a new user
 * namespace, or (new_user 0, inside the container, whose user namespace already gives the
 * rights and whose /proc cannot map a process outside its pid namespace) in the current one.
 */
static int enter_namespaces_as(unsigned uid, unsigned gid, char **read_only, char **hide, int new_user,
                               unsigned long propagation, u64 *hide_ids, long statx_nr) {
  struct mount_attr ro;
  unsigned char stx[256];
  int i, r, e;
  if (unshare(new_user ? CLONE_NEWUSER | CLONE_NEWNS : CLONE_NEWNS) != 0) return fail(ST_UNSHARE);
  if (new_user && (r = map_ids(uid, gid)) != 0) return r;
  /* Keep our mounts to ourselves (MS_SLAVE: and still get the host's later ones). */
  if (mount("none", "/", 0, MS_REC | propagation, 0) != 0) return fail(ST_MOUNT_PRIVATE);
  ro.set = MOUNT_ATTR_RDONLY;
  ro.clr = 0;
  ro.propagation = 0;
  ro.userns_fd = 0;
  for (i = 0; read_only[i]; i++) {
    if (mount(read_only[i], read_only[i], 0, MS_BIND | MS_REC, 0) != 0) return fail(ST_BIND);
    /* mount_setattr changes only the read-only bit, leaving the locked nosuid/nodev flags be. */
    if (syscall(SYS_MOUNT_SETATTR, AT_FDCWD, read_only[i], AT_RECURSIVE, &ro, sizeof ro) != 0) return fail(ST_READ_ONLY);
  }
  /* A named socket under /dev/null: connect() finds no socket there. One gone since it was listed needs nothing. */
  for (i = 0; hide && hide[i]; i++) {
    /* Kept namespaces note what each socket path named before it is covered ({0, 0}: nothing). */
    if (hide_ids && file_id(AT_FDCWD, hide[i], 0, statx_nr, stx, hide_ids + 2 * i) != 0) {
      e = *__errno_location();
      if (e != ENOENT && e != ENOTDIR && e != EACCES) return fail(ST_HIDE_SOCKET);
      hide_ids[2 * i] = hide_ids[2 * i + 1] = 0;
      continue;
    }
    if (mount("/dev/null", hide[i], 0, MS_BIND, 0) == 0) continue;
    e = *__errno_location();
    if (e != ENOENT && e != ENOTDIR && e != EACCES) return fail(ST_HIDE_SOCKET);
  }
  return 0;
}

static int enter_namespaces(unsigned uid, unsigned gid, char **read_only, char **hide, int new_user) {
  return enter_namespaces_as(uid, gid, read_only, hide, new_user, MS_PRIVATE, 0, -1);
}

static volatile int child_pid = 0;

static void forward(int sig) {
  if (child_pid > 0) kill(child_pid, sig);
}

/* Passes the signals a caller sends this process on to `pid`. */
static void forward_to(int pid) {
  child_pid = pid;
  /* The terminal already sends INT and QUIT to the whole foreground group, child included. */
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTERM, forward);
  signal(SIGHUP, forward);
  signal(SIGUSR1, forward);
  signal(SIGUSR2, forward);
}

/* Waits for `pid` and returns its wait status (or -1). */
static int wait_status(int pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (*__errno_location() != EINTR) return -1;
  }
  return status;
}

/* Ends this process as one with wait status `status` ended. */
static void end_like(int status) {
  int sig = status & 0x7f;
  if (sig == 0) _exit((status >> 8) & 0xff);
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(128 + sig);
}

/* Joins the executor's container (fds from /proc/PID/ns, checked by the caller). */
static int join_container(int user_fd, int mnt_fd, int pid_fd, char *cwd) {
  if (setns(user_fd, CLONE_NEWUSER) != 0) return fail(ST_JOIN);
  if (setns(mnt_fd, CLONE_NEWNS) != 0) return fail(ST_JOIN);
  if (setns(pid_fd, CLONE_NEWPID) != 0) return fail(ST_JOIN);
  /* Joining a mount namespace moves the cwd to its root. */
  if (chdir(cwd) != 0) return fail(ST_JOIN);
  return 0;
}

/*
 * Returns the command's exit status encoded as the shell does (code, or 128 + signal after
 * re-raising it), or a negative stage error if the child failed before its execve. With a
 * container (user_fd >= 0) the child joins it first; a pid namespace takes only new
 * children, so the child forks the command and ends as the command does.
 */
int relay_spawn_ns(char *path, char **argv, char **envp,
                   u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                   char **rule_paths, u64 *rule_access, void *bpf, long bpf_len, char **read_only, char **hide,
                   long user_fd, long mnt_fd, long pid_fd, char *cwd) {
  int fds[2], status = 0, report = 0, pid, r = 0;
  long n;
  unsigned uid = getuid(), gid = getgid();
  if (pipe2(fds, O_CLOEXEC) != 0) return fail(ST_PIPE);
  pid = fork();
  if (pid < 0) { int e = fail(ST_FORK); close(fds[0]); close(fds[1]); return e; }
  if (pid == 0) {
    close(fds[0]);
    /* The helper's death must not leave the command running unobserved. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (user_fd >= 0) r = join_container((int)user_fd, (int)mnt_fd, (int)pid_fd, cwd);
    if (r == 0) r = enter_namespaces(uid, gid, read_only, hide, user_fd < 0);
    /* Again after the binds: a cwd entered before them stays on the writable mount underneath. */
    if (r == 0 && chdir(cwd) != 0) r = fail(ST_CWD);
    if (r == 0 && user_fd >= 0) {
      int command = fork();
      if (command < 0) r = fail(ST_FORK);
      if (command > 0) {
        close(fds[1]);
        forward_to(command);
        end_like(wait_status(command));
      }
    }
    if (r == 0) r = confine_exec(path, argv, envp, handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, bpf, bpf_len, -1);
    write(fds[1], &r, sizeof r);
    _exit(126);
  }
  close(fds[1]);
  forward_to(pid);
  do { n = read(fds[0], &report, sizeof report); } while (n < 0 && *__errno_location() == EINTR);
  close(fds[0]);
  status = wait_status(pid);
  if (status < 0) return fail(ST_FORK);
  if (n == (long)sizeof report && report < 0) return report;
  if ((status & 0x7f) == 0) return (status >> 8) & 0xff;
  r = status & 0x7f;
  signal(r, SIG_DFL);
  raise(r);
  return 128 + r;
}

/* For choosing a mechanism and for `relay doctor`. */
/* 0 when a child can make the user + mount namespace relay_spawn_ns needs, else a stage error. */
int relay_probe_userns(void) {
  int status = 0, pid = fork();
  char *none[1];
  none[0] = 0;
  if (pid < 0) return fail(ST_FORK);
  if (pid == 0) {
    int r = enter_namespaces(getuid(), getgid(), none, none, 1);
    _exit(r == 0 ? 0 : (-r) / 1000);
  }
  while (waitpid(pid, &status, 0) < 0) {
    if (*__errno_location() != EINTR) return fail(ST_FORK);
  }
  if ((status & 0x7f) != 0) return -(ST_FORK * 1000);
  return -(((status >> 8) & 0xff) * 1000);
}

/*
 * The container's init, in the child of clone: pid 1 of the new pid namespace. It dies by
 * SIGKILL with the executor (PR_SET_PDEATHSIG; the kernel then kills every process in the
 * namespace), mounts a /proc of its own namespace (so a command's $$ and /proc/self agree),
 * drops every inherited descriptor but its two (INIT_CHANNEL_FD: the executor's requests;
 * INIT_HOST_PROC_FD: the host's /proc, where a command finds its pid as the executor sees it)
 * and becomes `exe argv` (relay's init loop, which spawns the commands and reaps).
 */
#define INIT_CHANNEL_FD 3
#define INIT_HOST_PROC_FD 4
#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030
#define O_DIRECTORY 0200000

/* A sigset (room for any libc's) holding SIGCHLD alone. */
static unsigned char *sigchld_set(unsigned char *set) {
  int i;
  for (i = 0; i < 128; i++) set[i] = 0;
  set[(SIGCHLD - 1) / 8] = (unsigned char)(1 << ((SIGCHLD - 1) % 8));
  return set;
}

static int container_child(unsigned uid, unsigned gid, char *exe, char **argv, char **envp, int report, int channel) {
  int r, fd, host_proc;
  unsigned char chld[128];
  reset_signals();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return fail(ST_FORK);
  if ((r = map_ids(uid, gid)) != 0) return r;
  /* Mounts from the host still arrive; nothing mounted here goes back. */
  if (mount("none", "/", 0, MS_REC | MS_SLAVE, 0) != 0) return fail(ST_MOUNT_PRIVATE);
  /* Opened before the container's /proc hides it. */
  host_proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (host_proc < 0) return fail(ST_MOUNT_PROC);
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0) != 0) return fail(ST_MOUNT_PROC);
  fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(ST_FORK);
  dup2(fd, 0);
  dup2(fd, 1);
  dup2(fd, 2);
  /* Moved above the numbers they go to first, so neither lands on the other; dup2 clears CLOEXEC. */
  channel = fcntl(channel, F_DUPFD, 16);
  host_proc = fcntl(host_proc, F_DUPFD, 16);
  if (channel < 0 || host_proc < 0) return fail(ST_FORK);
  if (dup2(channel, INIT_CHANNEL_FD) < 0 || dup2(host_proc, INIT_HOST_PROC_FD) < 0) return fail(ST_FORK);
  /* Everything else the executor had open (its protocol pipes among them) stays with it;
     the report pipe is close-on-exec already, so its closing tells the executor we ran. */
  if (syscall(SYS_CLOSE_RANGE, INIT_HOST_PROC_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
    for (fd = INIT_HOST_PROC_FD + 1; fd < 1024; fd++) if (fd != report) close(fd);
  /* Blocked from the start, so every thread the runtime makes has it blocked too and the
     init's signalfd sees each one (relay_init_wait); its commands unblock it (reset_signals). */
  sigprocmask(0 /* SIG_BLOCK */, sigchld_set(chld), 0);
  execve(exe, argv, envp);
  return fail(ST_EXECVE);
}

/*
 * Clones the container's init (clone_nr: the clone syscall's number on this CPU), giving it
 * `channel` (the init's end of the executor's socket pair). Returns its pid once it runs `exe`
 * (the report pipe closes on execve), or a negative stage error. Safe from a threaded
 * process: the child only makes system calls before its execve.
 */
int relay_start_container(long clone_nr, char *exe, char **argv, char **envp, long channel) {
  int fds[2], report = 0, pid, status;
  long n;
  unsigned uid = getuid(), gid = getgid();
  if (pipe2(fds, O_CLOEXEC) != 0) return fail(ST_PIPE);
  /* The child puts its own two descriptors at 3 and 4: the report pipe must not be there. */
  if (fds[1] <= INIT_HOST_PROC_FD) {
    int high = fcntl(fds[1], F_DUPFD_CLOEXEC, 16);
    close(fds[1]);
    if (high < 0) { int e = fail(ST_PIPE); close(fds[0]); return e; }
    fds[1] = high;
  }
  /* Raw clone without a new stack: fork's semantics, with the new namespaces. */
  pid = (int)syscall(clone_nr, CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) { int e = fail(ST_CLONE); close(fds[0]); close(fds[1]); return e; }
  if (pid == 0) {
    close(fds[0]);
    report = container_child(uid, gid, exe, argv, envp, fds[1], (int)channel);
    write(fds[1], &report, sizeof report);
    _exit(126);
  }
  close(fds[1]);
  do { n = read(fds[0], &report, sizeof report); } while (n < 0 && *__errno_location() == EINTR);
  close(fds[0]);
  if (n == (long)sizeof report && report < 0) {
    while (waitpid(pid, &status, 0) < 0 && *__errno_location() == EINTR) {}
    return report;
  }
  return pid;
}

/*
 * The init's side of spawning (init-loop.ts): each command is forked by the container's init,
 * so it is a child of pid 1 inside the container and needs no helper process of its own.
 */

/* This process's pid in the pid namespace of the procfs at `proc_fd` (the host's), or -1. */
static int pid_in(int proc_fd) {
  char buf[24];
  long n = readlinkat(proc_fd, "self", buf, sizeof buf);
  int pid = 0, i;
  if (n <= 0 || n >= (long)sizeof buf) return -1;
  for (i = 0; i < n; i++) {
    if (buf[i] < '0' || buf[i] > '9') return -1;
    pid = pid * 10 + (buf[i] - '0');
  }
  return pid;
}

/*
 * The command's side, after the fork: a session of its own, stdin /dev/null and stdout and
 * stderr on `out_fd`, the cwd, a user + mount namespace of its own with the protected paths
 * read-only, and no descriptor but those three.
 */
static int child_setup(char *cwd, long out_fd, char **read_only, char **hide, unsigned uid, unsigned gid, int *kept) {
  int null_fd, fd, r;
  setsid();
  null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2((int)out_fd, 1) < 0 || dup2((int)out_fd, 2) < 0) return fail(ST_STDIO);
  if (kept[KEPT_USER_NS] >= 0) {
    /* A kept namespace pair made for these very paths (relay_build_namespaces). */
    if (setns(kept[KEPT_USER_NS], CLONE_NEWUSER) != 0 || setns(kept[KEPT_MNT_NS], CLONE_NEWNS) != 0) return fail(ST_JOIN);
  } else if ((r = enter_namespaces(uid, gid, read_only, hide, 1)) != 0) {
    return r;
  }
  /* After the binds: a cwd entered before them would stay on the writable mount underneath. */
  if (chdir(cwd) != 0) return fail(ST_CWD);
  if (syscall(SYS_CLOSE_RANGE, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
    for (fd = 3; fd < 1024; fd++) close(fd);
  return 0;
}

/* Every signal blocked (into `old`), so no handler of the runtime runs in a child made now. */
static void block_all(unsigned char *all, unsigned char *old) {
  int i;
  for (i = 0; i < 128; i++) all[i] = 0xff;
  sigprocmask(SIG_SETMASK, all, old);
}

#define POLLIN 1
#define ETIMEDOUT 110
#define ST_STOPPED 22
#define ST_DEADLINE 23
#define P_PID 1
#define WSTOPPED 2
#define WNOHANG 1
#define WNOWAIT 0x01000000
#define CLD_STOPPED 5
#define CLOCK_MONOTONIC 1
/* How often a child that has not reported yet is looked at: is it stopped? */
#define STOP_CHECK_MS 50

static long now_ms(void) {
  struct { long sec; long nsec; } ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.sec * 1000 + ts.nsec / 1000000;
}

/* Whether child `pid` is stopped by a signal (the report is left for later). */
static int is_stopped(int pid) {
  int info[32], i;
  for (i = 0; i < 32; i++) info[i] = 0;
  if (waitid(P_PID, (unsigned)pid, info, WSTOPPED | WNOHANG | WNOWAIT) != 0) return 0;
  return info[4] == pid && info[2] == CLD_STOPPED;
}

/*
 * Reads up to `len` bytes from child `pid`'s report pipe: how many came (fewer: end of file),
 * -1 as soon as the child is seen stopped, -2 once `until` (now_ms) has passed.
 */
static long read_report(int fd, char *buf, long len, int pid, long until) {
  struct { int fd; short events; short revents; } p;
  long got = 0, n, left;
  int r;
  while (got < len) {
    left = until - now_ms();
    p.fd = fd; p.events = POLLIN; p.revents = 0;
    r = poll(&p, 1, (int)(left < 0 ? 0 : left < STOP_CHECK_MS ? left : STOP_CHECK_MS));
    if (r == 0) {
      if (is_stopped(pid)) return -1;
      if (now_ms() >= until) return -2;
      continue;
    }
    if (r < 0) { if (*__errno_location() == EINTR) continue; return got; }
    n = read(fd, buf + got, (unsigned long)(len - got));
    if (n < 0 && *__errno_location() == EINTR) continue;
    if (n <= 0) return got;
    got += n;
  }
  return got;
}

/* Ends a child that never got to run the command, and collects it (a stopped one too). */
static void end_child(int pid) {
  int status;
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && *__errno_location() == EINTR) {}
}

/*
 * relay_spawn_child's fork, where something could stop the child before its execve (no
 * Landlock signal scope): another command of the session may SIGSTOP it there, and a vfork
 * parent would wait for good. A plain fork (clone with fork's semantics, no atfork handlers)
 * leaves this thread free: the child reports its host pid and, if it fails, the failure on a
 * close-on-exec pipe, whose end of file means it exec'd. A child seen stopped before that is
 * killed at once; one merely slow is given until `deadline_ms` (one budget for both reports).
 * A child that did not exec is always killed before it is waited for: it may be stopped.
 */
static int spawn_forked(char *path, char **argv, char **envp,
                        u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                        char **rule_paths, u64 *rule_access, void *bpf, long bpf_len, char **read_only, char **hide,
                        long out_fd, char *cwd, long host_proc_fd, long clone_nr, long deadline_ms, int *out, int *kept) {
  unsigned char all[128], old[128];
  unsigned uid = getuid(), gid = getgid();
  int fds[2], pid, seen = -1, failed = 0;
  long a, b, until = now_ms() + deadline_ms;
  if (pipe2(fds, O_CLOEXEC) != 0) return fail(ST_PIPE);
  block_all(all, old);
  pid = (int)syscall(clone_nr, SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) {
    int r;
    close(fds[0]);
    seen = pid_in((int)host_proc_fd);
    write(fds[1], &seen, sizeof seen);
    r = seen > 0 ? child_setup(cwd, out_fd, read_only, hide, uid, gid, kept) : -(ST_HOST_PID * 1000 + 3);
    if (r == 0) r = confine_exec(path, argv, envp, handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, bpf, bpf_len, kept[KEPT_RULESET]);
    write(fds[1], &r, sizeof r);
    _exit(126);
  }
  sigprocmask(SIG_SETMASK, old, 0);
  close(fds[1]);
  if (pid < 0) { int e = fail(ST_FORK); close(fds[0]); return e; }
  a = read_report(fds[0], (char *)&seen, sizeof seen, pid, until);
  b = a == (long)sizeof seen ? read_report(fds[0], (char *)&failed, sizeof failed, pid, until) : 0;
  close(fds[0]);
  if (a < 0 || b < 0) {
    end_child(pid);
    return (a == -1 || b == -1) ? -(ST_STOPPED * 1000) : -(ST_DEADLINE * 1000 + ETIMEDOUT);
  }
  if (a != (long)sizeof seen || b == (long)sizeof failed) {
    end_child(pid);
    return b == (long)sizeof failed && failed < 0 ? failed : -(ST_FORK * 1000 + 5);
  }
  out[0] = seen;
  out[1] = (int)syscall(SYS_PIDFD_OPEN, pid, 0);
  return pid;
}

/*
 * Forks the confined command. Returns its pid in the container, with its pid on the host in
 * out[0] and a pidfd for it (close-on-exec; -1 if none) in out[1], once it has exec'd; or a
 * negative stage error once it has ended.
 *
 * With clone_nr < 0, vfork: copying the page tables of a runtime's address space for a fork
 * cost about a millisecond per command, and the child only makes system calls (on its own
 * descriptor table, signal table and credentials) until its execve. This thread waits
 * meanwhile, for as long as that takes: only safe where nothing can stop the child before its
 * execve (Landlock's signal scope, ABI 6). Otherwise (clone_nr: the clone syscall's number)
 * spawn_forked. Every signal is blocked across the fork so no handler of the runtime runs in
 * the child, which resets them all to their defaults before it unblocks them (confine_exec).
 */
int relay_spawn_child(char *path, char **argv, char **envp,
                      u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                      char **rule_paths, u64 *rule_access, void *bpf, long bpf_len, char **read_only, char **hide,
                      long out_fd, char *cwd, long host_proc_fd, long clone_nr, long deadline_ms, int *out, int *kept) {
  volatile int seen = -1, failed = 0;
  unsigned char all[128], old[128];
  unsigned uid = getuid(), gid = getgid();
  int pid, status;
  if (clone_nr >= 0)
    return spawn_forked(path, argv, envp, handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, bpf, bpf_len,
                        read_only, hide, out_fd, cwd, host_proc_fd, clone_nr, deadline_ms, out, kept);
  block_all(all, old);
  pid = vfork();
  if (pid == 0) {
    int r;
    seen = pid_in((int)host_proc_fd);
    r = seen > 0 ? child_setup(cwd, out_fd, read_only, hide, uid, gid, kept) : -(ST_HOST_PID * 1000 + 3);
    if (r == 0) r = confine_exec(path, argv, envp, handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, bpf, bpf_len, kept[KEPT_RULESET]);
    failed = r;
    _exit(126);
  }
  sigprocmask(SIG_SETMASK, old, 0);
  if (pid < 0) return fail(ST_FORK);
  if (failed < 0) {
    while (waitpid(pid, &status, 0) < 0 && *__errno_location() == EINTR) {}
    return failed;
  }
  out[0] = seen;
  out[1] = (int)syscall(SYS_PIDFD_OPEN, pid, 0);
  return pid;
}

struct iovec { void *base; unsigned long len; };
/* glibc's layout; musl's pads its int fields to the same offsets (zeroed here). */
struct msghdr_ { void *name; unsigned long namelen; struct iovec *iov; unsigned long iovlen; void *control; unsigned long controllen; long flags; };
struct fd_cmsg { unsigned long len; int level; int type; int fd; int pad; };
#define AF_UNIX 1
#define SOCK_SEQPACKET 5
#define SOCK_CLOEXEC 02000000
#define SOL_SOCKET 1
#define SCM_RIGHTS 1
#define MSG_DONTWAIT 0x40
#define MSG_NOSIGNAL 0x4000
#define MSG_TRUNC 0x20
#define MSG_CTRUNC 0x8
#define MSG_CMSG_CLOEXEC 0x40000000
#define CMSG_DATA_LEN 20

/* A close-on-exec AF_UNIX SOCK_SEQPACKET pair (0) or pipe (1) into fds; 0 or -errno. */
int relay_make_pair(long kind, int *fds) {
  int r = kind == 0 ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) : pipe2(fds, O_CLOEXEC);
  return r == 0 ? 0 : -*__errno_location();
}

/* Sends one message, with `fd` attached when it is >= 0, blocking or not; bytes sent or -errno. */
long relay_send(long sock, char *buf, long len, long fd, long block) {
  struct iovec iov;
  struct msghdr_ msg;
  struct fd_cmsg cm;
  long n;
  iov.base = buf;
  iov.len = (unsigned long)len;
  msg.name = 0; msg.namelen = 0; msg.iov = &iov; msg.iovlen = 1; msg.control = 0; msg.controllen = 0; msg.flags = 0;
  if (fd >= 0) {
    cm.len = CMSG_DATA_LEN; cm.level = SOL_SOCKET; cm.type = SCM_RIGHTS; cm.fd = (int)fd; cm.pad = 0;
    msg.control = &cm;
    msg.controllen = sizeof cm;
  }
  do { n = sendmsg((int)sock, &msg, (block ? 0 : MSG_DONTWAIT) | MSG_NOSIGNAL); } while (n < 0 && *__errno_location() == EINTR);
  return n < 0 ? -*__errno_location() : n;
}

/*
 * Receives one message into buf (blocking). *fd is the descriptor that came with it (close-on-
 * exec) or -1; extra descriptors are closed. Returns its length, 0 at end of file, -errno, or
 * -1000 for a message cut short (the descriptor is closed then too).
 */
long relay_recv(long sock, char *buf, long cap, int *fd) {
  struct iovec iov;
  struct msghdr_ msg;
  unsigned long control[16];
  struct fd_cmsg *cm;
  long n;
  int i, count;
  *fd = -1;
  iov.base = buf;
  iov.len = (unsigned long)cap;
  msg.name = 0; msg.namelen = 0; msg.iov = &iov; msg.iovlen = 1; msg.control = control; msg.controllen = sizeof control; msg.flags = 0;
  do { n = recvmsg((int)sock, &msg, MSG_CMSG_CLOEXEC); } while (n < 0 && *__errno_location() == EINTR);
  if (n < 0) return -*__errno_location();
  cm = (struct fd_cmsg *)control;
  if (msg.controllen >= 16 && cm->level == SOL_SOCKET && cm->type == SCM_RIGHTS) {
    count = (int)((cm->len - 16) / 4);
    for (i = 0; i < count; i++) {
      int got = (&cm->fd)[i];
      if (i == 0) *fd = got; else close(got);
    }
  }
  if (msg.flags & (MSG_TRUNC | MSG_CTRUNC)) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return -1000;
  }
  return n;
}

/*
 * The init's wait: on its channel, on SIGCHLD through a signalfd (for orphans; container_child
 * blocked it in every thread) and on a pidfd per running command (which needs no signal at
 * all). Sets ready[0] when `sock` has a message or was closed, ready[1 + i] when pidfds[i]'s
 * process has ended, and ready[1 + count] when a SIGCHLD came. Returns how many are ready, 0
 * after timeout_ms, or -errno.
 */
#define MAX_WATCHED 1024
int relay_init_wait(long sock, int *pidfds, long count, unsigned char *ready, long timeout_ms) {
  static struct { int fd; short events; short revents; } fds[MAX_WATCHED + 2];
  static int sigfd = -2;
  unsigned char set[128], drain[128 * 8];
  int i, r;
  if (sigfd == -2) sigfd = signalfd(-1, sigchld_set(set), O_CLOEXEC | 04000 /* SFD_NONBLOCK */);
  long asked = count;
  if (count > MAX_WATCHED) count = MAX_WATCHED;
  fds[0].fd = (int)sock; fds[0].events = 1; fds[0].revents = 0;
  fds[1].fd = sigfd; fds[1].events = 1; fds[1].revents = 0;
  for (i = 0; i < count; i++) { fds[2 + i].fd = pidfds[i]; fds[2 + i].events = 1; fds[2 + i].revents = 0; }
  r = poll(fds, (unsigned long)count + 2, (int)timeout_ms);
  if (r < 0) return *__errno_location() == EINTR ? 0 : -*__errno_location();
  if (fds[1].revents) read(sigfd, drain, sizeof drain);
  ready[0] = fds[0].revents != 0;
  for (i = 0; i < count; i++) ready[1 + i] = fds[2 + i].revents != 0;
  ready[1 + asked] = fds[1].revents != 0;
  return r;
}

/* Sends one byte with descriptors a and b attached. */
static long send_two_fds(int sock, int a, int b) {
  struct iovec iov;
  struct msghdr_ msg;
  struct fd_cmsg cm;
  char byte = 0;
  iov.base = &byte;
  iov.len = 1;
  msg.name = 0; msg.namelen = 0; msg.iov = &iov; msg.iovlen = 1; msg.flags = 0;
  cm.len = CMSG_DATA_LEN + 4; cm.level = SOL_SOCKET; cm.type = SCM_RIGHTS; cm.fd = a; cm.pad = b;
  msg.control = &cm;
  msg.controllen = sizeof cm;
  return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

/* Receives send_two_fds' message, already queued, into out[0..1]; 0 or -1. */
static int receive_two_fds(int sock, int *out) {
  struct iovec iov;
  struct msghdr_ msg;
  struct fd_cmsg cm;
  char byte;
  iov.base = &byte;
  iov.len = 1;
  msg.name = 0; msg.namelen = 0; msg.iov = &iov; msg.iovlen = 1; msg.flags = 0;
  msg.control = &cm;
  msg.controllen = sizeof cm;
  cm.len = 0;
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) != 1) return -1;
  if (msg.controllen < sizeof cm || cm.level != SOL_SOCKET || cm.type != SCM_RIGHTS || cm.len != CMSG_DATA_LEN + 4) {
    if (msg.controllen >= 20 && cm.level == SOL_SOCKET && cm.type == SCM_RIGHTS) close(cm.fd);
    return -1;
  }
  out[0] = cm.fd;
  out[1] = cm.pad;
  return 0;
}

/*
 * A user + mount namespace with `read_only` bound read-only and the `hide` sockets covered,
 * made once for the container's init to keep (kept[KEPT_USER_NS], kept[KEPT_MNT_NS]): a
 * command under the same paths joins it instead of making its own (an unshare, the id maps and
 * the binds, then their teardown at its exit). Its mounts are slaves of the container's, so
 * mounts the host makes later still reach every command, as they reach one made per command.
 * Made in a vfork child, which notes what each path names in ids (two u64 per path,
 * read_only's first, then hide's) and hands both namespaces back over a socket pair before it
 * ends. 0 with out[0..1] set (close-on-exec), or a negative stage error.
 */
long relay_build_namespaces(char **read_only, char **hide, u64 *ids, long statx_nr, int *out) {
  volatile int failed = 0;
  unsigned char all[128], old[128];
  unsigned uid = getuid(), gid = getgid();
  int pair[2], pid, status, n_ro = 0, r;
  while (read_only[n_ro]) n_ro++;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return fail(ST_PIPE);
  block_all(all, old);
  pid = vfork();
  if (pid == 0) {
    unsigned char stx[256];
    int i, user = -1, mnt = -1;
    r = enter_namespaces_as(uid, gid, read_only, hide, 1, MS_SLAVE, ids + 2 * n_ro, statx_nr);
    /* After the binds: each read-only path now names its bind's root, the very file it named. */
    for (i = 0; r == 0 && read_only[i]; i++)
      if (file_id(AT_FDCWD, read_only[i], 0, statx_nr, stx, ids + 2 * i) != 0) r = fail(ST_BIND);
    if (r == 0) {
      user = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
      mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
      if (user < 0 || mnt < 0 || send_two_fds(pair[1], user, mnt) != 1) r = fail(ST_JOIN);
    }
    failed = r;
    _exit(0);
  }
  sigprocmask(SIG_SETMASK, old, 0);
  if (pid < 0) r = fail(ST_FORK);
  else {
    while (waitpid(pid, &status, 0) < 0 && *__errno_location() == EINTR) {}
    r = failed < 0 ? failed : receive_two_fds(pair[0], out) == 0 ? 0 : -(ST_JOIN * 1000 + 5);
  }
  close(pair[0]);
  close(pair[1]);
  return r;
}

/*
 * The one symbol JavaScript binds. bun:ffi compiles a wrapper for every symbol it binds (about
 * a millisecond each, in every executor and every container init), so the functions above are
 * reached through this switch; a[] holds their arguments in order, each widened to 64 bits.
 * The op numbers are confine-cc.ts's Op.
 */
long relay_call(long op, long *a) {
  switch (op) {
  case 0:
    return relay_spawn_ns((char *)a[0], (char **)a[1], (char **)a[2], (u64)a[3], (u64)a[4], (u64)a[5], a[6], (char **)a[7],
                          (u64 *)a[8], (void *)a[9], a[10], (char **)a[11], (char **)a[12], a[13], a[14], a[15], (char *)a[16]);
  case 1:
    return relay_probe_userns();
  case 2:
    return relay_start_container(a[0], (char *)a[1], (char **)a[2], (char **)a[3], a[4]);
  case 3:
    return relay_spawn_child((char *)a[0], (char **)a[1], (char **)a[2], (u64)a[3], (u64)a[4], (u64)a[5], a[6], (char **)a[7],
                             (u64 *)a[8], (void *)a[9], a[10], (char **)a[11], (char **)a[12], a[13], (char *)a[14], a[15], a[16], a[17], (int *)a[18], (int *)a[19]);
  case 4:
    return relay_make_pair(a[0], (int *)a[1]);
  case 5:
    return relay_send(a[0], (char *)a[1], a[2], a[3], a[4]);
  case 6:
    return relay_recv(a[0], (char *)a[1], a[2], (int *)a[3]);
  case 7:
    return relay_init_wait(a[0], (int *)a[1], a[2], (unsigned char *)a[3], a[4]);
  case 8:
    return relay_init_signals();
  case 9:
    return relay_build_ruleset((u64)a[0], (u64)a[1], (u64)a[2], a[3], (char **)a[4], (u64 *)a[5], (u64 *)a[6], a[7]);
  case 10:
    return relay_paths_current((char **)a[0], (u64 *)a[1], a[2]);
  case 11:
    return relay_build_namespaces((char **)a[0], (char **)a[1], (u64 *)a[2], a[3], (int *)a[4]);
  default:
    return -22; /* EINVAL */
  }
}
