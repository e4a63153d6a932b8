/**
 * The seccomp filter for "network off": socket() and socketpair() succeed only for AF_UNIX,
 * io_uring (which can open sockets without socket()) is refused, and so is every syscall of a
 * foreign ABI (i386 or x32 on x86_64), which could reach socket() by another number. A refusal
 * is EPERM, so programs report "Operation not permitted" instead of dying.
 */

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_EPERM = 0x00050000 | 1;
const AF_UNIX = 1;
const X32_SYSCALL_BIT = 0x40000000;

// struct seccomp_data offsets: nr, arch, instruction_pointer, args[6].
const OFF_NR = 0;
const OFF_ARCH = 4;
const OFF_ARG0_LOW = 16;

interface ArchInfo {
  audit: number;
  socket: number;
  socketpair: number;
  x32: boolean;
}

const IO_URING_SETUP = 425;

export const ARCHES: Record<string, ArchInfo> = {
  x64: { audit: 0xc000003e, socket: 41, socketpair: 53, x32: true },
  arm64: { audit: 0xc00000b7, socket: 198, socketpair: 199, x32: false },
};

export type Insn = [code: number, jt: number, jf: number, k: number];

/**
 * The filter as classic BPF instructions for `arch` (process.arch naming). Jump offsets count
 * instructions after the next one, as in the kernel.
 */
export function networkFilter(arch: string): Insn[] | undefined {
  const a = ARCHES[arch];
  if (!a) return undefined;
  const allow: Insn = [RET_K, 0, 0, RET_ALLOW];
  const deny: Insn = [RET_K, 0, 0, RET_EPERM];
  return [
    [LD_W_ABS, 0, 0, OFF_ARCH],
    [JEQ_K, 1, 0, a.audit],
    deny, // a foreign ABI
    [LD_W_ABS, 0, 0, OFF_NR],
    ...(a.x32 ? [[JSET_K, 0, 1, X32_SYSCALL_BIT] as Insn, deny] : []),
    [JEQ_K, 0, 1, IO_URING_SETUP],
    deny,
    [JEQ_K, 2, 0, a.socket],
    [JEQ_K, 1, 0, a.socketpair],
    allow, // any other syscall
    [LD_W_ABS, 0, 0, OFF_ARG0_LOW],
    [JEQ_K, 0, 1, AF_UNIX],
    allow,
    deny,
  ];
}

/** The filter as the bytes of a `struct sock_filter[]`. */
export function encodeFilter(insns: Insn[]): Uint8Array {
  const buf = new Uint8Array(insns.length * 8);
  const view = new DataView(buf.buffer);
  insns.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k >>> 0, true);
  });
  return buf;
}
