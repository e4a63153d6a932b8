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

#define O_RDONLY 0
#define O_WRONLY 1
#define O_CLOEXEC 02000000
#define O_PATH 010000000
#define EINTR 4
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

struct ruleset_attr { u64 handled_fs; u64 handled_net; u64 scoped; };
struct path_beneath_attr { u64 allowed; int parent_fd; } __attribute__((packed));
struct mount_attr { u64 set; u64 clr; u64 propagation; u64 userns_fd; };
struct sock_fprog { u16 len; void *filter; };

static int fail(int stage) { return -(stage * 1000 + *__errno_location()); }

/*
 * Confines the calling thread. rule_paths is NULL-terminated with one access mask per path;
 * attr_size is 8, 16 or 24 bytes as the running Landlock ABI knows. bpf may be NULL.
 * Integers are passed as 64-bit values: 32-bit arguments on the stack came through bun:ffi as 0.
 */
static int confine(u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                   char **rule_paths, u64 *rule_access, void *bpf, long bpf_len) {
  struct ruleset_attr attr;
  struct path_beneath_attr rule;
  struct sock_fprog prog;
  int ruleset, i, fd;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(ST_NO_NEW_PRIVS);
  if (handled_fs || handled_net || scoped) {
    attr.handled_fs = handled_fs;
    attr.handled_net = handled_net;
    attr.scoped = scoped;
    ruleset = (int)syscall(SYS_LANDLOCK_CREATE_RULESET, &attr, (unsigned long)attr_size, 0);
    if (ruleset < 0) return fail(ST_RULESET);
    for (i = 0; rule_paths[i]; i++) {
      fd = open(rule_paths[i], O_PATH | O_CLOEXEC);
      if (fd < 0) { int e = fail(ST_OPEN_RULE_PATH); close(ruleset); return e; }
      rule.allowed = rule_access[i];
      rule.parent_fd = fd;
      if (syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
        int e = fail(ST_ADD_RULE); close(fd); close(ruleset); return e;
      }
      close(fd);
    }
    if (syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0) { int e = fail(ST_RESTRICT); close(ruleset); return e; }
    close(ruleset);
  }
  if (bpf && bpf_len > 0) {
    prog.len = (u16)bpf_len;
    prog.filter = bpf;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (unsigned long)&prog, 0, 0) != 0) return fail(ST_SECCOMP);
  }
  return 0;
}

/*
 * Dispositions the runtime ignores (Bun: SIGPIPE, SIGXFSZ) and its signal mask survive execve;
 * the command gets the defaults a shell gives instead.
 */
static void reset_signals(void) {
  unsigned char empty[128];
  int sig;
  for (sig = 0; sig < 128; sig++) empty[sig] = 0;
  for (sig = 1; sig <= 64; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == 32 || sig == 33) continue;
    signal(sig, SIG_DFL);
  }
  sigprocmask(SIG_SETMASK, empty, 0);
}

static int confine_exec(char *path, char **argv, char **envp,
                       u64 handled_fs, u64 handled_net, u64 scoped, long attr_size,
                       char **rule_paths, u64 *rule_access, void *bpf, long bpf_len) {
  int r = confine(handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, bpf, bpf_len);
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
static int enter_namespaces(unsigned uid, unsigned gid, char **read_only, int new_user) {
  struct mount_attr ro;
  int i, r;
  if (unshare(new_user ? CLONE_NEWUSER | CLONE_NEWNS : CLONE_NEWNS) != 0) return fail(ST_UNSHARE);
  if (new_user && (r = map_ids(uid, gid)) != 0) return r;
  /* Keep our mounts to ourselves. */
  if (mount("none", "/", 0, MS_REC | MS_PRIVATE, 0) != 0) return fail(ST_MOUNT_PRIVATE);
  ro.set = MOUNT_ATTR_RDONLY;
  ro.clr = 0;
  ro.propagation = 0;
  ro.userns_fd = 0;
  for (i = 0; read_only[i]; i++) {
    if (mount(read_only[i], read_only[i], 0, MS_BIND | MS_REC, 0) != 0) return fail(ST_BIND);
    /* mount_setattr changes only the read-only bit, leaving the locked nosuid/nodev flags be. */
    if (syscall(SYS_MOUNT_SETATTR, AT_FDCWD, read_only[i], AT_RECURSIVE, &ro, sizeof ro) != 0) return fail(ST_READ_ONLY);
  }
  return 0;
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
                   char **rule_paths, u64 *rule_access, void *bpf, long bpf_len, char **read_only,
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
    if (r == 0) r = enter_namespaces(uid, gid, read_only, user_fd < 0);
    if (r == 0 && user_fd >= 0) {
      int command = fork();
      if (command < 0) r = fail(ST_FORK);
      if (command > 0) {
        close(fds[1]);
        forward_to(command);
        end_like(wait_status(command));
      }
    }
    if (r == 0) r = confine_exec(path, argv, envp, handled_fs, handled_net, scoped, attr_size, rule_paths, rule_access, bpf, bpf_len);
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
    int r = enter_namespaces(getuid(), getgid(), none, 1);
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
 * drops every inherited descriptor and becomes `exe argv` (relay's init loop, which reaps).
 */
static int container_child(unsigned uid, unsigned gid, char *exe, char **argv, char **envp, int report) {
  int r, fd;
  reset_signals();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return fail(ST_FORK);
  if ((r = map_ids(uid, gid)) != 0) return r;
  /* Mounts from the host still arrive; nothing mounted here goes back. */
  if (mount("none", "/", 0, MS_REC | MS_SLAVE, 0) != 0) return fail(ST_MOUNT_PRIVATE);
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0) != 0) return fail(ST_MOUNT_PROC);
  fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(ST_FORK);
  dup2(fd, 0);
  dup2(fd, 1);
  dup2(fd, 2);
  /* Everything else the executor had open (its protocol pipes among them) stays with it;
     the report pipe is close-on-exec already, so its closing tells the executor we ran. */
  if (syscall(SYS_CLOSE_RANGE, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
    for (fd = 3; fd < 1024; fd++) if (fd != report) close(fd);
  execve(exe, argv, envp);
  return fail(ST_EXECVE);
}

/*
 * Clones the container's init (clone_nr: the clone syscall's number on this CPU). Returns its pid once it runs `exe` (the report pipe closes on
 * execve), or a negative stage error. Safe from a threaded process: the child only makes
 * system calls before its execve.
 */
int relay_start_container(long clone_nr, char *exe, char **argv, char **envp) {
  int fds[2], report = 0, pid, status;
  long n;
  unsigned uid = getuid(), gid = getgid();
  if (pipe2(fds, O_CLOEXEC) != 0) return fail(ST_PIPE);
  /* Raw clone without a new stack: fork's semantics, with the new namespaces. */
  pid = (int)syscall(clone_nr, CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) { int e = fail(ST_CLONE); close(fds[0]); close(fds[1]); return e; }
  if (pid == 0) {
    close(fds[0]);
    report = container_child(uid, gid, exe, argv, envp, fds[1]);
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
