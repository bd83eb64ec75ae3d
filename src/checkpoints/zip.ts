/**
 * torch.save writes a zip archive, whose End Of Central Directory record is written last: a
 * truncated or half-copied file has none. This checks only that record, not every member.
 */
import type { FileHandle } from 'node:fs/promises';

const EOCD_SIGNATURE = 0x06054b50; // "PK\x05\x06"
const EOCD_SIZE = 22;
const MAX_COMMENT = 0xffff;
const LOCAL_HEADER = Buffer.from('PK\x03\x04', 'latin1');

/** Whether the file starts like a zip archive (a local file header). */
export async function startsLikeZip(fh: FileHandle): Promise<boolean> {
  const head = Buffer.alloc(4);
  const { bytesRead } = await fh.read(head, 0, 4, 0);
  return bytesRead === 4 && head.equals(LOCAL_HEADER);
}

/** The first byte of the file (legacy torch.save files are a pickle: 0x80). */
export async function firstByte(fh: FileHandle): Promise<number | null> {
  const b = Buffer.alloc(1);
  const { bytesRead } = await fh.read(b, 0, 1, 0);
  return bytesRead === 1 ? b[0]! : null;
}

/**
 * Whether the end record is present and consistent: found within the last 64 KiB + 22 bytes,
 * its comment reaches exactly the end of the file, and (unless zip64 stands in) the central
 * directory it points at lies before it.
 */
export async function hasZipEndRecord(fh: FileHandle, size: number): Promise<boolean> {
  if (size < EOCD_SIZE) return false;
  // torch.save writes no comment, so the record is the last 22 bytes: read those first, and the
  // whole window only for the rest (64 KiB per file is 3 GB read over 50,000 checkpoints).
  if (await endRecordIn(fh, size, EOCD_SIZE)) return true;
  return endRecordIn(fh, size, Math.min(size, MAX_COMMENT + EOCD_SIZE));
}

/** Whether the last `len` bytes of the file hold a consistent end record. */
async function endRecordIn(fh: FileHandle, size: number, len: number): Promise<boolean> {
  const tail = Buffer.alloc(len);
  const { bytesRead } = await fh.read(tail, 0, len, size - len);
  if (bytesRead !== len) return false;
  for (let i = len - EOCD_SIZE; i >= 0; i--) {
    if (tail.readUInt32LE(i) !== EOCD_SIGNATURE) continue;
    if (i + EOCD_SIZE + tail.readUInt16LE(i + 20) !== len) continue;
    const cdSize = tail.readUInt32LE(i + 12);
    const cdOffset = tail.readUInt32LE(i + 16);
    const zip64 = cdSize === 0xffffffff || cdOffset === 0xffffffff;
    if (zip64 || cdOffset + cdSize <= size - len + i) return true;
  }
  return false;
}
