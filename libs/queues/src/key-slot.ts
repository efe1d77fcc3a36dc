/**
 * The Redis Cluster slot of a key: CRC16 (XMODEM) of the key, or of its hash tag — the text between
 * the first `{` and the next `}` when that text is not empty — modulo 16384 (the cluster spec).
 */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  let data = bytes;
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) data = bytes.subarray(open + 1, close);
  }
  return crc16(data) % 16384;
}

function crc16(data: Uint8Array): number {
  let crc = 0;
  for (const byte of data) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
