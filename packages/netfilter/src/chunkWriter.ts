/**
 * @internal
 * The writer behind `writeSave` and `formatCanonical`: text gathered into pieces of about 64k
 * characters before it goes to the sink, so a large ruleset is written out without its whole text
 * (or a string per line) in memory at once, and without a write per line.
 */

/** How much text a {@link ChunkWriter} gathers before handing it to its sink. */
export const CHUNK_CHARS = 1 << 16;

/** Runs of bytes shorter than this are copied into the text being gathered (a write each would cost more). */
const PASS_THROUGH_BYTES = 1 << 12;

export class ChunkWriter {
  private buf = '';

  /**
   * `sink` takes the gathered text. With `bytesSink`, {@link putBytes} hands long runs of bytes to
   * it as they are (views of the caller's buffer, never copied), after the text gathered so far.
   */
  constructor(
    private readonly sink: (chunk: string) => void,
    private readonly bytesSink?: (chunk: Uint8Array) => void,
  ) {}

  put(s: string): void {
    this.buf += s;
    if (this.buf.length >= CHUNK_CHARS) {
      this.sink(this.buf);
      this.buf = '';
    }
  }

  /** The bytes `b[from, to)`, which must be ASCII (one character each). */
  putBytes(b: Buffer, from: number, to: number): void {
    if (this.bytesSink === undefined || to - from < PASS_THROUGH_BYTES) {
      this.put(b.toString('latin1', from, to));
      return;
    }
    this.flush();
    this.bytesSink(b.subarray(from, to));
  }

  /** Hands on what is gathered: call once at the end. */
  flush(): void {
    if (this.buf !== '') {
      this.sink(this.buf);
      this.buf = '';
    }
  }
}
