/**
 * Reading a codec request's body within limits, so that one request cannot take the process's
 * memory or time (a 12 MB body of 4,000,000 empty payloads once grew a codec server to 3.7 GiB).
 * A body is refused while it arrives: by its Content-Length before any of it is read, by its
 * size or its number of payloads as soon as either passes the limit, and nothing of it is parsed
 * until all of it passed.
 */
import type { IncomingMessage } from 'node:http';

/**
 * The Web UI and `temporal … --codec-endpoint` send one event's payloads per request, and
 * Temporal refuses an event field over 2 MiB: 2.7 MiB in base64, so 4 MiB leaves room.
 */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Far more than one event's payloads (a workflow's arguments, a result, a failure's details). */
export const MAX_PAYLOADS = 4096;
/** `{"payloads":[{"metadata":{…}}]}` is 4 deep; deeper only costs the parser. */
const MAX_DEPTH = 16;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Counts the entries of the arrays and objects one level inside the top-level object (the
 * `payloads` array) as the bytes arrive, by the commas between them; no JSON is built.
 */
export class PayloadCounter {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private commas = 0;

  feed(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === 0x5c /* \ */) this.escaped = true;
        else if (b === 0x22 /* " */) this.inString = false;
      } else if (b === 0x22) this.inString = true;
      else if (b === 0x7b /* { */ || b === 0x5b /* [ */) {
        if (++this.depth > MAX_DEPTH) throw new HttpError(400, `body nested deeper than ${MAX_DEPTH}`);
      } else if (b === 0x7d /* } */ || b === 0x5d /* ] */) this.depth--;
      else if (b === 0x2c /* , */ && this.depth === 2 && ++this.commas >= MAX_PAYLOADS) {
        throw new HttpError(413, `more than ${MAX_PAYLOADS} payloads in one request`);
      }
    }
  }
}

/** The whole body, or an HttpError (413 over a limit) as soon as it is clear, leaving the rest unread. */
export function readLimitedBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > MAX_BODY_BYTES) return Promise.reject(new HttpError(413, `body over ${MAX_BODY_BYTES} bytes (Content-Length ${declared})`));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const counter = new PayloadCounter();
    let size = 0;
    // Stop reading without destroying the socket: the answer still has to go out on it.
    const refuse = (err: unknown) => {
      req.off('data', onData);
      req.pause();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) return refuse(new HttpError(413, `body over ${MAX_BODY_BYTES} bytes`));
      try {
        counter.feed(chunk);
      } catch (err) {
        return refuse(err);
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    // A client gone mid-body: without this the request would hold its slot for ever.
    req.once('close', () => reject(new HttpError(400, 'the request ended before its body')));
  });
}
