// Reads a JSON document made of top-level arrays (a COCO annotation file) one array element at a time: the
// bytes are scanned for where each element starts and ends, and only the elements the caller asks for are
// parsed, each on its own. Memory stays at the file's bytes plus one element, where JSON.parse of a whole
// 360 MB file builds over 7 GB of objects.
import { setImmediate } from 'node:timers/promises';

/** The document is not JSON, or not an object at the top (the message says where). */
export class JsonScanError extends Error {}

export interface Element {
  key: string;
  index: number;
  /** The element's size in bytes: the caller can refuse to parse one that is too large. */
  bytes: number;
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
const DELIMITER = 5; // ,
const KINDS = new Uint8Array(256);
for (const byte of [0x20, 0x09, 0x0a, 0x0d]) KINDS[byte] = SPACE;
KINDS[QUOTE] = STRING;
KINDS[OBJECT_START] = OPEN;
KINDS[ARRAY_START] = OPEN;
KINDS[OBJECT_END] = CLOSE;
KINDS[ARRAY_END] = CLOSE;
KINDS[COMMA] = DELIMITER;
const BOM = [0xef, 0xbb, 0xbf];
/** The event loop gets a turn after this many bytes: a large file never stalls lease renewals or requests. */
const BYTES_PER_TURN = 8 * 2 ** 20;

class Scanner {
  position = 0;
  /** Where the event loop last had a turn. */
  private turn = 0;
  private readonly text: Buffer;

  constructor(text: Buffer) {
    this.text = text;
    if (BOM.every((byte, index) => text[index] === byte)) this.position = BOM.length;
  }

  fail(what: string): never {
    throw new JsonScanError(`${what} at byte ${this.position}`);
  }

  /** The byte at the position (a method, not a getter: each call reads it anew). */
  byte(): number | undefined {
    return this.text[this.position];
  }

  skipSpace(): void {
    const { text } = this;
    let at = this.position;
    while (at < text.length && KINDS[text[at]] === SPACE) at += 1;
    this.position = at;
  }

  /** Steps over `byte` (after any space), or fails naming what was expected. */
  expect(byte: number, what: string): void {
    this.skipSpace();
    if (this.byte() !== byte) this.fail(`expected ${what}`);
    this.position += 1;
  }

  /** Steps over a string; its end is found with indexOf, so long strings cost little. */
  skipString(): void {
    let at = this.position + 1;
    for (;;) {
      const quote = this.text.indexOf(QUOTE, at);
      if (quote < 0) this.fail('unterminated string');
      let backslashes = 0;
      while (this.text[quote - 1 - backslashes] === BACKSLASH) backslashes += 1;
      at = quote + 1;
      if (backslashes % 2 === 0) break;
    }
    this.position = at;
  }

  /**
   * Steps over one value. Only strings and bracket nesting are followed: the elements the caller takes are
   * checked by JSON.parse, the rest only need their end found.
   */
  skipValue(): void {
    this.skipSpace();
    const first = this.byte();
    if (first === undefined) this.fail('expected a value');
    if (first === QUOTE) return this.skipString();
    const { text } = this;
    let at = this.position;
    if (KINDS[first] !== OPEN) {
      while (at < text.length && KINDS[text[at]] === OTHER) at += 1;
      if (at === this.position) this.fail('expected a value');
      this.position = at;
      return;
    }
    let depth = 0;
    do {
      if (at >= text.length) {
        this.position = at;
        this.fail('unterminated array or object');
      }
      const kind = KINDS[text[at]];
      if (kind === STRING) {
        this.position = at;
        this.skipString();
        at = this.position;
        continue;
      }
      if (kind === OPEN) depth += 1;
      else if (kind === CLOSE) depth -= 1;
      at += 1;
    } while (depth > 0);
    this.position = at;
  }

  /** The string value at the position, parsed (keys). */
  readString(): string {
    this.skipSpace();
    if (this.byte() !== QUOTE) this.fail('expected a key');
    const start = this.position;
    this.skipString();
    return JSON.parse(this.text.toString('utf8', start, this.position)) as string;
  }

  /** Steps over an object, calling `member` at each key; `member` steps over the value. */
  async members(member: (key: string) => Promise<void>): Promise<void> {
    this.expect(OBJECT_START, 'a JSON object');
    this.skipSpace();
    if (this.byte() === OBJECT_END) {
      this.position += 1;
      return;
    }
    for (;;) {
      const key = this.readString();
      this.expect(COLON, '":"');
      this.skipSpace();
      await member(key);
      this.skipSpace();
      if (this.byte() === OBJECT_END) break;
      this.expect(COMMA, '"," or "}"');
    }
    this.position += 1;
  }

  /** Steps over an array, calling `element` with where each element starts and ends. */
  async elements(element: (index: number, start: number, end: number) => void): Promise<void> {
    this.expect(ARRAY_START, 'an array');
    this.skipSpace();
    if (this.byte() === ARRAY_END) {
      this.position += 1;
      return;
    }
    for (let index = 0; ; index += 1) {
      this.skipSpace();
      const start = this.position;
      this.skipValue();
      element(index, start, this.position);
      if (this.position - this.turn > BYTES_PER_TURN) {
        this.turn = this.position;
        await setImmediate();
      }
      this.skipSpace();
      if (this.byte() === ARRAY_END) break;
      this.expect(COMMA, '"," or "]"');
    }
    this.position += 1;
  }

  /** Fails unless only space is left. */
  end(): void {
    this.skipSpace();
    if (this.position < this.text.length) this.fail('unexpected text after the JSON object');
  }

  parse(what: string, start: number, end: number): unknown {
    try {
      return JSON.parse(this.text.toString('utf8', start, end));
    } catch (error) {
      throw new JsonScanError(`${what}: ${(error as Error).message}`);
    }
  }
}

/**
 * Walks a JSON object's top level and calls `take` for each element of the arrays whose key is in `keys`, in
 * document order. Returns the keys whose values are arrays. A JsonScanError when the document is not a JSON
 * object; an element that JSON.parse refuses throws a JsonScanError from its parse().
 */
export async function forEachElement(text: Buffer, keys: ReadonlySet<string>, take: (element: Element) => void): Promise<Set<string>> {
  const scanner = new Scanner(text);
  const arrays = new Set<string>();
  await scanner.members(async (key) => {
    if (scanner.byte() !== ARRAY_START) return scanner.skipValue();
    arrays.add(key);
    const taken = keys.has(key);
    await scanner.elements((index, start, end) => {
      if (taken) take({ key, index, bytes: end - start, parse: () => scanner.parse(`${key}[${index}]`, start, end) });
    });
  });
  scanner.end();
  return arrays;
}
