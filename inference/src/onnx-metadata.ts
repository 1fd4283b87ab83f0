// The metadata_props of an ONNX file (what ultralytics' exporter writes: names, stride, imgsz, task, end2end, kpt_shape,
// args …), read straight from the protobuf without an ONNX library, and the Python literals their values are written in.

/** The string key/value pairs of ModelProto.metadata_props (field 14; StringStringEntryProto key = 1, value = 2). */
export function readOnnxMetadata(bytes: Uint8Array): Map<string, string> {
  const props = new Map<string, string>();
  const reader = new ProtoReader(bytes, 0, bytes.length);
  while (!reader.done()) {
    const { field, wire } = reader.tag();
    if (field === 14 && wire === 2) {
      const entry = reader.sub();
      let key = '';
      let value = '';
      while (!entry.done()) {
        const inner = entry.tag();
        if (inner.field === 1 && inner.wire === 2) key = entry.string();
        else if (inner.field === 2 && inner.wire === 2) value = entry.string();
        else entry.skip(inner.wire);
      }
      props.set(key, value);
    } else {
      reader.skip(wire);
    }
  }
  return props;
}

const utf8 = new TextDecoder('utf-8');

class ProtoReader {
  private readonly bytes: Uint8Array;
  private at: number;
  private readonly end: number;

  constructor(bytes: Uint8Array, start: number, end: number) {
    this.bytes = bytes;
    this.at = start;
    this.end = end;
  }

  done(): boolean {
    return this.at >= this.end;
  }

  /** A varint as a JS number (exact below 2^53, which every length and tag here is). */
  varint(): number {
    let result = 0;
    let scale = 1;
    for (let shift = 0; shift < 64; shift += 7) {
      if (this.at >= this.end) throw new Error('ONNX file ends inside a varint');
      const byte = this.bytes[this.at++];
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
      scale *= 128;
    }
    throw new Error('ONNX file has a varint longer than 10 bytes');
  }

  tag(): { field: number; wire: number } {
    const tag = this.varint();
    return { field: Math.floor(tag / 8), wire: tag % 8 };
  }

  private length(): number {
    const length = this.varint();
    if (this.at + length > this.end) throw new Error('ONNX file has a field longer than its container');
    return length;
  }

  sub(): ProtoReader {
    const length = this.length();
    const sub = new ProtoReader(this.bytes, this.at, this.at + length);
    this.at += length;
    return sub;
  }

  string(): string {
    const length = this.length();
    const text = utf8.decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return text;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.at += 8;
    else if (wire === 2) {
      const length = this.length();
      this.at += length;
    } else if (wire === 5) this.at += 4;
    else throw new Error(`ONNX file has an unsupported protobuf wire type ${wire}`);
    if (this.at > this.end) throw new Error('ONNX file ends inside a field');
  }
}

export type PythonValue = string | number | boolean | null | PythonValue[] | Map<string | number, PythonValue>;

/** Parses a Python literal as repr() writes it (dicts, lists, tuples, strings, numbers, True/False/None), as ast.literal_eval would. */
export function parsePythonLiteral(text: string): PythonValue {
  const parser = new LiteralParser(text);
  const value = parser.value();
  parser.space();
  if (!parser.done())
    throw new Error(`unexpected text after a Python literal: ${text.slice(parser.at, parser.at + 20)}`);
  return value;
}

const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '0': '\0',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
};

class LiteralParser {
  private readonly text: string;
  at = 0;

  constructor(text: string) {
    this.text = text;
  }

  done(): boolean {
    return this.at >= this.text.length;
  }

  space(): void {
    while (this.at < this.text.length && /\s/.test(this.text[this.at])) this.at++;
  }

  private expect(char: string): void {
    this.space();
    if (this.text[this.at] !== char) throw new Error(`expected '${char}' at ${this.at} of a Python literal`);
    this.at++;
  }

  /** Parses items up to `close`, allowing a trailing comma. */
  private items(close: string, item: () => void): void {
    this.space();
    while (this.text[this.at] !== close) {
      item();
      this.space();
      if (this.text[this.at] === ',') this.at++;
      else if (this.text[this.at] !== close)
        throw new Error(`expected ',' or '${close}' at ${this.at} of a Python literal`);
      this.space();
    }
    this.at++;
  }

  value(): PythonValue {
    this.space();
    const char = this.text[this.at];
    if (char === '{') {
      this.at++;
      const map = new Map<string | number, PythonValue>();
      this.items('}', () => {
        const key = this.value();
        if (typeof key !== 'string' && typeof key !== 'number')
          throw new Error('a Python dict key that is not a string or number');
        this.expect(':');
        map.set(key, this.value());
      });
      return map;
    }
    if (char === '[' || char === '(') {
      this.at++;
      const list: PythonValue[] = [];
      this.items(char === '[' ? ']' : ')', () => list.push(this.value()));
      return list;
    }
    if (char === "'" || char === '"') return this.string(char);
    const word = /^(True|False|None|[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|inf|nan))/i.exec(
      this.text.slice(this.at),
    );
    if (!word)
      throw new Error(`unexpected text in a Python literal at ${this.at}: ${this.text.slice(this.at, this.at + 20)}`);
    this.at += word[0].length;
    if (word[0] === 'True') return true;
    if (word[0] === 'False') return false;
    if (word[0] === 'None') return null;
    return Number(word[0].replace(/inf/i, 'Infinity').replace(/nan/i, 'NaN'));
  }

  private string(quote: string): string {
    this.at++;
    let out = '';
    while (this.at < this.text.length && this.text[this.at] !== quote) {
      const char = this.text[this.at++];
      if (char !== '\\') {
        out += char;
        continue;
      }
      const next = this.text[this.at++];
      if (next === 'x' || next === 'u' || next === 'U') {
        const digits = next === 'x' ? 2 : next === 'u' ? 4 : 8;
        out += String.fromCodePoint(parseInt(this.text.slice(this.at, this.at + digits), 16));
        this.at += digits;
      } else {
        out += ESCAPES[next] ?? `\\${next}`;
      }
    }
    if (this.text[this.at] !== quote) throw new Error('unterminated string in a Python literal');
    this.at++;
    return out;
  }
}
