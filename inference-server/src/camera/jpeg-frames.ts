// JPEG frames out of an MJPEG byte stream (ffmpeg's image2pipe): each frame runs from its SOI marker through its
// segments and entropy-coded scans to its EOI. Segment lengths are followed rather than searching for FFD9, which may
// also appear inside a segment (an embedded thumbnail). Bytes outside frames and malformed frames are skipped; a frame
// past the bound is an error. Each byte is looked at about once, and the buffer never holds much more than one frame.

const SOI = 0xd8;
const EOI = 0xd9;
const SOS = 0xda;
/** Markers without a length: TEM and the restart markers. */
const standalone = (marker: number) => marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7);

export class FrameTooLarge extends Error {
  override name = 'FrameTooLarge';
}

export class JpegFrames {
  readonly #maxFrameBytes: number;
  #buffer = Buffer.alloc(64 * 1024);
  /** The bytes held: buffer[#start, #end); a frame starts at #start once #position is past it. */
  #start = 0;
  #end = 0;
  /** Where parsing resumes (0: no SOI found yet), and whether it is inside a scan. */
  #position = 0;
  #inScan = false;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Takes the next bytes; returns the frames they complete, each its own copy. Throws FrameTooLarge. */
  push(chunk: Uint8Array): Buffer[] {
    this.#append(chunk);
    const frames: Buffer[] = [];
    for (let end = this.#nextFrameEnd(); end !== undefined; end = this.#nextFrameEnd()) {
      frames.push(Buffer.from(this.#buffer.subarray(this.#start, end)));
      this.#restartAt(end);
    }
    if (this.#end - this.#start > this.#maxFrameBytes)
      throw new FrameTooLarge(`a frame is larger than ${this.#maxFrameBytes} bytes`);
    return frames;
  }

  #append(chunk: Uint8Array): void {
    const held = this.#end - this.#start;
    if (this.#end + chunk.length > this.#buffer.length) {
      // Moved to the front, into a larger buffer when needed (doubling: appends stay linear in the bytes read).
      const size = Math.max(this.#buffer.length, held + chunk.length);
      const target =
        size > this.#buffer.length
          ? Buffer.alloc(Math.max(size, Math.min(2 * this.#buffer.length, this.#maxFrameBytes + chunk.length)))
          : this.#buffer;
      this.#buffer.copy(target, 0, this.#start, this.#end);
      this.#buffer = target;
      if (this.#position > 0) this.#position -= this.#start;
      [this.#start, this.#end] = [0, held];
    }
    this.#buffer.set(chunk, this.#end);
    this.#end += chunk.length;
  }

  #restartAt(offset: number): void {
    this.#start = offset;
    this.#position = 0;
    this.#inScan = false;
  }

  /** The end of the complete frame at #start, once it is all there; malformed frames are skipped. */
  #nextFrameEnd(): number | undefined {
    for (;;) {
      if (this.#position === 0 && !this.#findSoi()) return undefined;
      const end = this.#parse();
      if (end !== 'malformed') return end;
      this.#restartAt(this.#start + 1);
    }
  }

  /** Moves #start to the first SOI; false (keeping a trailing FF, which may begin one) while there is none. */
  #findSoi(): boolean {
    const bytes = this.#buffer.subarray(0, this.#end);
    for (let at = bytes.indexOf(0xff, this.#start); at >= 0 && at + 1 < this.#end; at = bytes.indexOf(0xff, at + 1)) {
      if (bytes[at + 1] === SOI) {
        this.#start = at;
        this.#position = at + 2;
        return true;
      }
    }
    this.#start = this.#end > this.#start && bytes[this.#end - 1] === 0xff ? this.#end - 1 : this.#end;
    return false;
  }

  /** Follows the frame from #position: its end, undefined while bytes are missing, or 'malformed'. */
  #parse(): number | 'malformed' | undefined {
    const bytes = this.#buffer.subarray(0, this.#end);
    while (this.#position + 1 < this.#end) {
      const at = this.#position;
      if (this.#inScan) {
        // Entropy-coded data: FF00 is a stuffed FF and FFD0-FFD7 are restarts; any other marker ends the scan.
        const next = bytes.indexOf(0xff, at);
        if (next < 0 || next + 1 === this.#end) {
          this.#position = next < 0 ? this.#end : next;
          return undefined;
        }
        const marker = bytes[next + 1]!;
        if (marker === 0xff) this.#position = next + 1;
        else if (marker === 0x00 || standalone(marker)) this.#position = next + 2;
        else [this.#position, this.#inScan] = [next, false];
        continue;
      }
      if (bytes[at] !== 0xff) return 'malformed';
      const marker = bytes[at + 1]!;
      if (marker === EOI) return at + 2;
      if (marker === SOI) return 'malformed';
      if (marker === 0xff) {
        this.#position = at + 1; // a fill byte
      } else if (standalone(marker)) {
        this.#position = at + 2;
      } else {
        if (at + 3 >= this.#end) return undefined;
        const length = bytes.readUInt16BE(at + 2);
        if (length < 2) return 'malformed';
        this.#position = at + 2 + length;
        this.#inScan = marker === SOS;
      }
    }
    return undefined;
  }
}
