/** The zip End Of Central Directory check behind torch.save files (src/checkpoints/zip.ts). */
import { spawnSync } from 'node:child_process';
import { open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { hasZipEndRecord, startsLikeZip } from '../../src/checkpoints/zip';
import { removeDir, tempDir } from './helpers';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => removeDir(dir));

async function check(file: string): Promise<[boolean, boolean]> {
  const fh = await open(file, 'r');
  try {
    return [await startsLikeZip(fh), await hasZipEndRecord(fh, (await fh.stat()).size)];
  } finally {
    await fh.close();
  }
}

/** A zip written by Python's zipfile, optionally with an archive comment and zip64 forced. */
function pyZip(file: string, comment: string, zip64: boolean): void {
  const code = `import zipfile,sys
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.comment = sys.argv[2].encode()
    with z.open("data", "w", force_zip64=${zip64 ? 'True' : 'False'}) as f: f.write(bytes(range(256)) * 64)`;
  const r = spawnSync('python3', ['-c', code, file, comment], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
}

it.each([
  ['plain', '', false],
  ['with a comment', 'x'.repeat(1000), false],
  ['zip64', '', true],
])('accepts a whole zip (%s) and rejects every truncation of it', async (_, comment, zip64) => {
  const file = path.join(dir, 'a.pt');
  pyZip(file, comment, zip64);
  expect(await check(file)).toEqual([true, true]);
  const whole = await readFile(file);
  for (const cut of [1, 21, 22, 23, 100, whole.length - 100, whole.length - 1]) {
    await writeFile(file, whole.subarray(0, cut));
    expect([cut, (await check(file))[1]]).toEqual([cut, false]);
  }
});

it('does not take end-record bytes among the data for the real record', async () => {
  const file = path.join(dir, 'b.pt');
  pyZip(file, '', false);
  const whole = await readFile(file);
  // Cut in the middle of the data, where a stray record sits 30 bytes before the new end.
  const cut = Buffer.from(whole.subarray(0, 4096));
  const at = cut.length - 30;
  cut.writeUInt32LE(0x06054b50, at);
  cut.writeUInt16LE(1234, at + 20); // a comment that does not end where the file ends
  await writeFile(file, cut);
  expect(await check(file)).toEqual([true, false]);
  cut.writeUInt16LE(8, at + 20); // one that does, but a central directory past the record
  cut.writeUInt32LE(500, at + 12);
  cut.writeUInt32LE(4000, at + 16);
  await writeFile(file, cut);
  expect(await check(file)).toEqual([true, false]);
});
