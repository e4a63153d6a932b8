import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ARCHES, encodeFilter, type Insn, networkFilter } from "../../src/sandbox/linux/seccomp-bpf.ts";

// Values from linux/seccomp.h, linux/audit.h, linux/socket.h and linux/filter.h, written out
// here rather than imported so a wrong constant in the module cannot hide behind itself.
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO_EPERM = 0x00050000 | 1;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
const AUDIT_ARCH_I386 = 0x40000003;
const X32_SYSCALL_BIT = 0x40000000;
const BPF_MAXINSNS = 4096;
const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;
const AF_PACKET = 17;
const IO_URING_SETUP = 425;

interface ArchCase {
  audit: number;
  socket: number;
  socketpair: number;
  ordinary: Record<string, number>;
}

const CASES: Record<string, ArchCase> = {
  x64: {
    audit: AUDIT_ARCH_X86_64,
    socket: 41,
    socketpair: 53,
    ordinary: { read: 0, write: 1, openat: 257, connect: 42, execve: 59 },
  },
  arm64: {
    audit: AUDIT_ARCH_AARCH64,
    socket: 198,
    socketpair: 199,
    ordinary: { read: 63, write: 64, openat: 56, execve: 221 },
  },
};

/** A `struct seccomp_data` (little endian): nr, arch, instruction_pointer, args[6]. */
function seccompData(nr: number, arch: number, args: bigint[] = [], ip = 0n): DataView {
  const view = new DataView(new ArrayBuffer(64));
  view.setInt32(0, nr | 0, true);
  view.setUint32(4, arch >>> 0, true);
  view.setBigUint64(8, ip, true);
  args.forEach((a, i) => view.setBigUint64(16 + 8 * i, BigInt.asUintN(64, a), true));
  return view;
}

/**
 * A classic-BPF interpreter for the opcodes a seccomp filter of this shape uses: LD|W|ABS,
 * JMP|JEQ|K, JMP|JSET|K and RET|K. Jumps are relative to the next instruction. Anything else
 * (an unknown opcode, a misaligned or out-of-range load, a jump past the end, running off the
 * end without RET) throws, as the kernel's verifier would refuse such a program.
 */
function run(prog: Insn[], data: DataView): number {
  let acc = 0;
  let pc = 0;
  for (let steps = 0; steps <= prog.length; steps++) {
    const insn = prog[pc];
    if (!insn) throw new Error(`fell off the end of the program at pc ${pc}`);
    const [code, jt, jf, k] = insn;
    const jump = (taken: boolean) => {
      const next = pc + 1 + (taken ? jt : jf);
      if (next >= prog.length) throw new Error(`jump past the end at pc ${pc} (to ${next})`);
      pc = next;
    };
    switch (code) {
      case 0x20: // BPF_LD | BPF_W | BPF_ABS
        if (k % 4 !== 0 || k < 0 || k + 4 > data.byteLength) throw new Error(`bad load offset ${k} at pc ${pc}`);
        acc = data.getUint32(k, true);
        pc++;
        break;
      case 0x15: // BPF_JMP | BPF_JEQ | BPF_K
        jump(acc === k >>> 0);
        break;
      case 0x45: // BPF_JMP | BPF_JSET | BPF_K
        jump((acc & k) >>> 0 !== 0);
        break;
      case 0x06: // BPF_RET | BPF_K
        return k >>> 0;
      default:
        throw new Error(`unknown opcode 0x${code.toString(16)} at pc ${pc}`);
    }
  }
  throw new Error("program did not terminate");
}

describe("the BPF interpreter used by these tests", () => {
  const data = seccompData(0, AUDIT_ARCH_X86_64);
  test("throws on an unknown opcode", () => {
    assert.throws(() => run([[0x07, 0, 0, 0]], data), /unknown opcode/);
  });
  test("throws on a jump past the end", () => {
    assert.throws(() => run([[0x15, 5, 5, 0]], data), /past the end/);
  });
  test("throws on falling off the end without RET", () => {
    assert.throws(() => run([[0x20, 0, 0, 0]], data), /fell off/);
  });
  test("jumps relative to the next instruction and reads arch at offset 4", () => {
    const prog: Insn[] = [
      [0x20, 0, 0, 4],
      [0x15, 1, 0, AUDIT_ARCH_X86_64],
      [0x06, 0, 0, 111],
      [0x06, 0, 0, 222],
    ];
    assert.equal(run(prog, data), 222);
    assert.equal(run(prog, seccompData(0, AUDIT_ARCH_AARCH64)), 111);
  });
});

describe("networkFilter", () => {
  test("has a filter for each arch the tests know, and none for ia32", () => {
    assert.deepEqual(Object.keys(ARCHES).sort(), Object.keys(CASES).sort());
    assert.equal(networkFilter("ia32"), undefined);
    assert.equal(networkFilter("nonexistent"), undefined);
  });

  for (const [arch, c] of Object.entries(CASES)) {
    describe(arch, () => {
      const prog = networkFilter(arch);
      const verdict = (nr: number, args: bigint[] = [], audit = c.audit) => {
        assert.ok(prog);
        return run(prog, seccompData(nr, audit, args));
      };

      test("is a valid program shorter than BPF_MAXINSNS", () => {
        assert.ok(prog);
        assert.ok(prog.length > 0 && prog.length < BPF_MAXINSNS);
        for (const [code, jt, jf, k] of prog) {
          assert.ok([0x20, 0x15, 0x45, 0x06].includes(code), `opcode 0x${code.toString(16)}`);
          assert.ok(Number.isInteger(jt) && jt >= 0 && jt <= 255);
          assert.ok(Number.isInteger(jf) && jf >= 0 && jf <= 255);
          assert.ok(Number.isInteger(k) && k >= 0 && k <= 0xffffffff);
        }
        assert.equal(prog.at(-1)?.[0], 0x06, "the last instruction returns");
      });

      test("allows socket(AF_UNIX)", () => {
        assert.equal(verdict(c.socket, [BigInt(AF_UNIX), 1n, 0n]), SECCOMP_RET_ALLOW);
      });

      for (const [name, family] of Object.entries({ AF_INET, AF_INET6, AF_NETLINK, AF_PACKET })) {
        test(`denies socket(${name}) with EPERM`, () => {
          assert.equal(verdict(c.socket, [BigInt(family), 1n, 0n]), SECCOMP_RET_ERRNO_EPERM);
        });
      }

      test("allows socketpair(AF_UNIX) and denies socketpair(AF_INET)", () => {
        assert.equal(verdict(c.socketpair, [BigInt(AF_UNIX), 1n, 0n, 0x7ffd0000n]), SECCOMP_RET_ALLOW);
        assert.equal(verdict(c.socketpair, [BigInt(AF_INET), 1n, 0n, 0x7ffd0000n]), SECCOMP_RET_ERRNO_EPERM);
      });

      test("denies io_uring_setup, which can open sockets without socket()", () => {
        assert.equal(verdict(IO_URING_SETUP, [8n, 0n]), SECCOMP_RET_ERRNO_EPERM);
      });

      test("allows ordinary syscalls, whatever their arguments", () => {
        // connect() is not filtered: an AF_UNIX socket must still be able to connect, and an
        // AF_INET socket cannot exist in the first place.
        for (const [name, nr] of Object.entries(c.ordinary)) {
          assert.equal(verdict(nr), SECCOMP_RET_ALLOW, name);
          assert.equal(verdict(nr, [BigInt(AF_INET), 2n, 3n]), SECCOMP_RET_ALLOW, `${name}(AF_INET, ...)`);
        }
      });

      test("denies every syscall of a foreign arch", () => {
        for (const nr of [0, 1, 3, 11, 102, c.socket, c.socketpair, 359]) {
          assert.equal(verdict(nr, [BigInt(AF_UNIX)], AUDIT_ARCH_I386), SECCOMP_RET_ERRNO_EPERM, `i386 nr ${nr}`);
        }
        const other = c.audit === AUDIT_ARCH_X86_64 ? AUDIT_ARCH_AARCH64 : AUDIT_ARCH_X86_64;
        assert.equal(verdict(0, [], other), SECCOMP_RET_ERRNO_EPERM);
      });

      test("reads only the low 32 bits of the socket family", () => {
        // seccomp_data.args[0] is the full u64 register, but socket(2) takes an int family and
        // the kernel truncates it, so the filter reads the low word (offset 16, little endian).
        // High bits over AF_UNIX are still AF_UNIX to the kernel, so the verdict is allow.
        assert.equal(verdict(c.socket, [0xdeadbeef_00000001n]), SECCOMP_RET_ALLOW);
        assert.equal(verdict(c.socket, [0x00000001_00000002n]), SECCOMP_RET_ERRNO_EPERM);
      });

      if (arch === "x64") {
        test("denies x32 syscalls (nr with __X32_SYSCALL_BIT)", () => {
          assert.equal(verdict(X32_SYSCALL_BIT + 41, [BigInt(AF_INET)]), SECCOMP_RET_ERRNO_EPERM);
          assert.equal(verdict(X32_SYSCALL_BIT + 41, [BigInt(AF_UNIX)]), SECCOMP_RET_ERRNO_EPERM);
          assert.equal(verdict(X32_SYSCALL_BIT + 0), SECCOMP_RET_ERRNO_EPERM);
        });
      }
    });
  }
});

describe("encodeFilter", () => {
  test("encodes struct sock_filter: u16 code, u8 jt, u8 jf, u32 k, little endian", () => {
    const insns: Insn[] = [
      [0x20, 0, 0, 4],
      [0x15, 0xfe, 0x01, 0xc000003e],
      [0x06, 0, 0, 0xffffffff],
    ];
    const bytes = encodeFilter(insns);
    assert.ok(bytes instanceof Uint8Array);
    assert.equal(bytes.length, 24);
    assert.deepEqual([...bytes.subarray(8, 16)], [0x15, 0x00, 0xfe, 0x01, 0x3e, 0x00, 0x00, 0xc0]);
  });

  for (const arch of Object.keys(CASES)) {
    test(`round-trips the ${arch} filter`, () => {
      const prog = networkFilter(arch);
      assert.ok(prog);
      const bytes = encodeFilter(prog);
      assert.equal(bytes.length, prog.length * 8);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const decoded: Insn[] = prog.map((_, i) => [
        view.getUint16(i * 8, true),
        view.getUint8(i * 8 + 2),
        view.getUint8(i * 8 + 3),
        view.getUint32(i * 8 + 4, true),
      ]);
      assert.deepEqual(decoded, prog);
    });
  }
});
