// Reads a JSON document made of top-level arrays (a COCO annotation file) one array element at a time, from a
// stream of its bytes: the bytes are scanned for where each element starts and ends, and only the elements the
// caller asks for are kept and parsed, each on its own. Memory stays at a chunk plus one element whatever the
// file's size, where JSON.parse of a whole 360 MB file builds over 7 GB of objects (and holding its bytes, a
// file of 100 million tiny records, 400 MB).
import { setImmediate } from 'node:timers/promises';

/** The document is not JSON, or not an object at the top (the message says where). */
export class JsonScanError extends Error {}

export interface Element {
  key: string;
  index: number;
  /** The element's size in bytes: the caller can refuse to parse one that is too large. */
  bytes: number;
  /** The element parsed; only during the call it is given to, and only when `bytes` is at most `maxBytes`. */
  parse(): unknown;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OBJECT_START = 0x7b;
const OBJECT_END = 0x7d;
const ARRAY_START = 0x5b;
const ARRAY_END = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
// What each byte is to the scanner, looked up in a table: the loops below run over every byte of the file.
const OTHER = 0;
const SPACE = 1;
const STRING = 2;
const OPEN = 3; // { [
const CLOSE = 4; // } ]
const DELIMITER = 5; // , :
const KINDS = new Uint8Array(256);
for (const byte of [0x20, 0x09, 0x0a, 0x0d]) KINDS[byte] = SPACE;
KINDS[QUOTE] = STRING;
KINDS[OBJECT_START] = OPEN;
KINDS[ARRAY_START] = OPEN;
KINDS[OBJECT_END] = CLOSE;
KINDS[ARRAY_END] = CLOSE;
KINDS[COMMA] = DELIMITER;
KINDS[COLON] = DELIMITER;
const BOM = [0xef, 0xbb, 0xbf];
/** The event loop gets a turn after this many bytes: a large file never stalls lease renewals or requests. */
const BYTES_PER_TURN = 8 * 2 ** 20;
/** Keys longer than this are no key a caller asks for: they are stepped over, not kept. */
const MAX_KEY_BYTES = 1024;

// Where the scanner is in the document: the grammar around the top-level arrays, and inside a value.
const BEFORE_OBJECT = 0;
const KEY_OR_END = 1; // after `{`
const KEY = 2; // after `,` between members
const IN_KEY = 3;
const BEFORE_COLON = 4;
const MEMBER_VALUE = 5;
const AFTER_MEMBER = 6;
const ELEMENT_OR_END = 7; // after a member array's `[`
const ELEMENT = 8; // after `,` between elements
const AFTER_ELEMENT = 9;
const IN_VALUE = 10;
const AFTER_OBJECT = 11;

/** What the end of the bytes in each state lacks, for the error. */
const MISSING: Record<number, string> = {
  [BEFORE_OBJECT]: 'expected a JSON object',
  [KEY_OR_END]: 'expected a key',
  [KEY]: 'expected a key',
  [IN_KEY]: 'unterminated string',
  [BEFORE_COLON]: 'expected ":"',
  [MEMBER_VALUE]: 'expected a value',
  [AFTER_MEMBER]: 'expected "," or "}"',
  [ELEMENT_OR_END]: 'expected a value',
  [ELEMENT]: 'expected a value',
  [AFTER_ELEMENT]: 'expected "," or "]"',
};

/**
 * The element given to the caller, one object reused for every element (a file may have a hundred million):
 * its bytes are the pieces kept from earlier chunks and the chunk's own from start to end.
 */
class ChunkElement implements Element {
  key = '';
  index = 0;
  bytes = 0;
  pieces: Buffer[] | null = null;
  chunk: Buffer | null = null;
  start = 0;
  end = 0;
  private readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  parse(): unknown {
    const { pieces, chunk } = this;
    if (pieces === null || chunk === null || this.bytes > this.maxBytes)
      throw new Error(`${this.key}[${this.index}] is larger than ${this.maxBytes} bytes, or is gone`);
    const text =
      pieces.length === 0
        ? chunk.toString('utf8', this.start, this.end)
        : Buffer.concat([...pieces, chunk.subarray(this.start, this.end)]).toString('utf8');
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new JsonScanError(`${this.key}[${this.index}]: ${(error as Error).message}`);
    }
  }
}

/**
 * Scans the document chunk by chunk. Only strings and bracket nesting are followed inside values: the
 * elements the caller takes are checked by JSON.parse, the rest only need their end found.
 */
class Scanner {
  readonly arrays = new Set<string>();
  private state = BEFORE_OBJECT;
  /** Bytes of the document before the current chunk. */
  private offset = 0;
  /** The bytes so far are the start of a byte order mark. */
  private bomSoFar = false;
  /** The member key being read, and the current member's key (null: a key no caller asks for). */
  private keyPieces: Buffer[] = [];
  private keyBytes = 0;
  private key: string | null = null;
  private taken = false;
  private index = 0;
  // The value being stepped over: its nesting depth, string state, and (an element taken) its bytes so far.
  private depth = 0;
  private scalar = false;
  private inString = false;
  private escaped = false;
  /** Where the value starts in the current chunk (0 when it started in an earlier one), and its bytes in earlier ones. */
  private valueStart = 0;
  private valueBytes = 0;
  private pieces: Buffer[] | null = null;
  private inElement = false;
  private readonly keys: ReadonlySet<string>;
  private readonly take: (element: Element) => void;
  private readonly maxBytes: number;
  private readonly element: ChunkElement;

  constructor(keys: ReadonlySet<string>, take: (element: Element) => void, maxBytes: number) {
    [this.keys, this.take, this.maxBytes] = [keys, take, maxBytes];
    this.element = new ChunkElement(maxBytes);
  }

  private fail(what: string, at: number): never {
    throw new JsonScanError(`${what} at byte ${this.offset + at}`);
  }

  feed(chunk: Buffer): void {
    const { length } = chunk;
    let at = 0;
    while (at < length) {
      if (this.state === IN_VALUE) {
        at = this.stepValue(chunk, at);
        continue;
      }
      const byte = chunk[at];
      const kind = KINDS[byte];
      if (kind === SPACE && this.state !== IN_KEY) {
        at += 1;
        continue;
      }
      switch (this.state) {
        case BEFORE_OBJECT:
          if (
            this.offset + at < BOM.length &&
            byte === BOM[this.offset + at] &&
            (this.offset + at === 0 || this.bomSoFar)
          ) {
            this.bomSoFar = true;
            break;
          }
          if (byte !== OBJECT_START) this.fail('expected a JSON object', at);
          this.state = KEY_OR_END;
          break;
        case KEY_OR_END:
        case KEY:
          if (byte === OBJECT_END && this.state === KEY_OR_END) this.state = AFTER_OBJECT;
          else if (byte !== QUOTE) this.fail('expected a key', at);
          else [this.state, this.keyPieces, this.keyBytes, this.escaped] = [IN_KEY, [], 0, false];
          break;
        case IN_KEY:
          at = this.stepKey(chunk, at);
          continue;
        case BEFORE_COLON:
          if (byte !== COLON) this.fail('expected ":"', at);
          this.state = MEMBER_VALUE;
          break;
        case MEMBER_VALUE:
          if (byte === ARRAY_START) {
            if (this.key !== null) this.arrays.add(this.key);
            this.taken = this.key !== null && this.keys.has(this.key);
            [this.state, this.index] = [ELEMENT_OR_END, 0];
            break;
          }
          this.startValue(chunk, at, false);
          continue;
        case AFTER_MEMBER:
          if (byte === OBJECT_END) this.state = AFTER_OBJECT;
          else if (byte === COMMA) this.state = KEY;
          else this.fail('expected "," or "}"', at);
          break;
        case ELEMENT_OR_END:
          if (byte === ARRAY_END) {
            this.state = AFTER_MEMBER;
            break;
          }
          this.startValue(chunk, at, true);
          continue;
        case ELEMENT:
          this.startValue(chunk, at, true);
          continue;
        case AFTER_ELEMENT:
          if (byte === ARRAY_END) this.state = AFTER_MEMBER;
          else if (byte === COMMA) this.state = ELEMENT;
          else this.fail('expected "," or "]"', at);
          break;
        default:
          this.fail('unexpected text after the JSON object', at);
      }
      at += 1;
    }
    if (this.state === IN_VALUE) this.keep(chunk, this.valueStart, length);
    this.valueStart = 0;
    this.offset += length;
  }

  /** Fails unless the document has ended. */
  end(): void {
    if (this.state === IN_VALUE && this.scalar) this.endValue(Buffer.alloc(0), 0);
    if (this.state === AFTER_OBJECT) return;
    const what =
      this.state === IN_VALUE
        ? this.inString
          ? 'unterminated string'
          : 'unterminated array or object'
        : MISSING[this.state];
    this.fail(what, 0);
  }

  private startValue(chunk: Buffer, at: number, element: boolean): void {
    const kind = KINDS[chunk[at]];
    if (kind === CLOSE || kind === DELIMITER) this.fail('expected a value', at);
    [this.state, this.inElement, this.valueStart, this.valueBytes] = [IN_VALUE, element, at, 0];
    this.pieces = element && this.taken ? [] : null;
    [this.depth, this.scalar, this.inString, this.escaped] = [0, kind === OTHER, false, false];
  }

  /** Steps through the value from `at`; returns where it stopped (the chunk's end, or just past the value). */
  private stepValue(chunk: Buffer, from: number): number {
    const { length } = chunk;
    let at = from;
    if (this.scalar) {
      while (at < length && KINDS[chunk[at]] === OTHER) at += 1;
      if (at < length) this.endValue(chunk, at);
      return at;
    }
    let { depth, inString, escaped } = this;
    while (at < length) {
      const byte = chunk[at];
      at += 1;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) {
          inString = false;
          if (depth === 0) break;
        }
        continue;
      }
      const kind = KINDS[byte];
      if (kind === STRING) inString = true;
      else if (kind === OPEN) depth += 1;
      else if (kind === CLOSE && --depth === 0) break;
    }
    [this.depth, this.inString, this.escaped] = [depth, inString, escaped];
    if (depth === 0 && !inString) this.endValue(chunk, at);
    return at;
  }

  /** Keeps the part of a taken element in this chunk while the element stays within maxBytes. */
  private keep(chunk: Buffer, start: number, end: number): void {
    this.valueBytes += end - start;
    if (this.pieces === null) return;
    if (this.valueBytes > this.maxBytes) this.pieces = null;
    else this.pieces.push(Buffer.from(chunk.subarray(start, end)));
  }

  /** The value ended at `end` of the chunk: an element taken goes to the caller. */
  private endValue(chunk: Buffer, end: number): void {
    this.state = this.inElement ? AFTER_ELEMENT : AFTER_MEMBER;
    if (!this.inElement) return;
    const { element } = this;
    element.index = this.index;
    this.index += 1;
    if (!this.taken) return;
    [element.key, element.bytes] = [this.key as string, this.valueBytes + end - this.valueStart];
    [element.pieces, element.chunk, element.start, element.end] = [this.pieces, chunk, this.valueStart, end];
    this.pieces = null;
    this.take(element);
    element.chunk = element.pieces = null;
  }

  /** Reads a key's string up to its closing quote, keeping at most MAX_KEY_BYTES of it. */
  private stepKey(chunk: Buffer, from: number): number {
    const { length } = chunk;
    let at = from;
    let { escaped } = this;
    let closed = false;
    while (at < length) {
      const byte = chunk[at];
      at += 1;
      if (escaped) escaped = false;
      else if (byte === BACKSLASH) escaped = true;
      else if (byte === QUOTE) {
        closed = true;
        break;
      }
    }
    this.escaped = escaped;
    const end = closed ? at - 1 : at;
    this.keyBytes += end - from;
    if (this.keyBytes <= MAX_KEY_BYTES) this.keyPieces.push(chunk.subarray(from, end));
    if (!closed) {
      this.keyPieces = this.keyPieces.map((piece) => Buffer.from(piece)); // the chunk is not kept
      return at;
    }
    this.state = BEFORE_COLON;
    this.key = null;
    if (this.keyBytes <= MAX_KEY_BYTES) {
      try {
        this.key = JSON.parse(`"${Buffer.concat(this.keyPieces).toString('utf8')}"`) as string;
      } catch {
        this.fail('expected a key', at - 1);
      }
    }
    this.keyPieces = [];
    return at;
  }
}

/**
 * Walks a JSON object's top level, read from `chunks`, and calls `take` for each element of the arrays whose key
 * is in `keys`, in document order; an element over `maxBytes` is given with its size but cannot be parsed.
 * Returns the keys whose values are arrays. A JsonScanError when the document is not a JSON object; an element
 * that JSON.parse refuses throws a JsonScanError from its parse().
 */
export async function forEachElement(
  chunks: AsyncIterable<Uint8Array>,
  keys: ReadonlySet<string>,
  maxBytes: number,
  take: (element: Element) => void,
): Promise<Set<string>> {
  const scanner = new Scanner(keys, take, maxBytes);
  let sinceTurn = 0;
  for await (const chunk of chunks) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    scanner.feed(bytes);
    sinceTurn += bytes.length;
    if (sinceTurn > BYTES_PER_TURN) {
      sinceTurn = 0;
      await setImmediate();
    }
  }
  scanner.end();
  return scanner.arrays;
}
