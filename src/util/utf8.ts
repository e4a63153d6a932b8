/** Byte-level UTF-8 helpers for reads cut at a byte budget. */

/** Where the last complete UTF-8 character of `buf` ends (a cut may have split the final one). */
export function wholeCharsEnd(buf: Uint8Array): number {
  let lead = buf.length - 1;
  while (lead > 0 && (buf[lead]! & 0xc0) === 0x80) lead--;
  if (lead < 0) return 0;
  const b = buf[lead]!;
  const size = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return buf.length - lead < size ? lead : buf.length;
}
