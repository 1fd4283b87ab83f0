import { StringDecoder } from 'node:string_decoder';
import { AnswerError } from './provider.ts';

/** One element of a listing: its name, the elements within it, and its text (entities and references replaced). */
export interface XmlElement {
  name: string;
  children: XmlElement[];
  text: string;
}

/** Deeper than any listing nests (S3's and Azure's go four deep). */
const MAX_DEPTH = 32;
/**
 * Elements in one answer: a page of 1,000 Azure blobs, each with its twenty-odd properties, is about 22,000, and
 * ListBuckets' 10,000 buckets (its most) 40,000.
 */
const MAX_ELEMENTS = 50_000;
/** The children of an element that has none: shared, never added to. */
const NONE: XmlElement[] = Object.freeze([]) as unknown as XmlElement[];
/** An element's text (a key, URL-encoded, is at most 3 KiB; a continuation token less). */
const MAX_TEXT = 64 * 1024;
/** One tag, comment, declaration or CDATA section. */
const MAX_MARKUP = 64 * 1024;

/**
 * Reads a storage listing (S3, Azure) as it arrives, a chunk at a time: each chunk costs time linear in its length
 * (no search ever starts over), and every depth, count and length is bounded, so a hostile endpoint's answer costs
 * its own request, never the event loop. What is not a listing within those bounds is an AnswerError, thrown as
 * soon as it is seen. Tags are read to their first `>` (a listing's attributes hold none), a DOCTYPE is refused
 * (no entity of a document's own is ever expanded), and only XML's five entities and character references are known.
 */
export class XmlReader {
  private readonly decoder = new StringDecoder('utf8');
  private readonly root: XmlElement = { name: '', children: NONE, text: '' };
  /** The elements open, outermost first, each with its text as yet unreplaced. */
  private readonly open: Array<{ element: XmlElement; raw: string }> = [{ element: this.root, raw: '' }];
  /** Each element name once, however many elements bear it. */
  private readonly names = new Map<string, string>();
  /** Text not yet read: a tag (or comment…) begun but not ended in the chunks so far. */
  private pending = '';
  /** How much of `pending` was already searched for its end, so a long tag arriving in small chunks is searched once. */
  private searched = 0;
  private count = 0;

  write(chunk: Buffer): void {
    const text = this.decoder.write(chunk);
    const begun = this.pending.length > 0;
    this.pending += text;
    // Every markup ends in `>`: a tag begun before this chunk and not ended in it is not searched again.
    if (begun && !text.includes('>')) {
      if (this.pending.length > MAX_MARKUP) throw new AnswerError(`a tag longer than ${MAX_MARKUP} characters`);
      return;
    }
    this.consume();
  }

  /** The document, once its last chunk is written: its elements are the root's children. */
  end(): XmlElement {
    this.pending += this.decoder.end();
    this.consume();
    if (this.pending || this.open.length > 1) throw new AnswerError('it ends within an element');
    if (this.root.children.length === 0) throw new AnswerError('it holds no element');
    return this.root;
  }

  private consume(): void {
    const input = this.pending;
    let at = 0;
    while (at < input.length) {
      const lt = input.indexOf('<', at);
      if (lt < 0) {
        this.addText(input.slice(at));
        at = input.length;
        break;
      }
      if (lt > at) this.addText(input.slice(at, lt));
      at = lt;
      const end = this.markupEnd(input, lt, lt === 0 ? this.searched : 0);
      if (end < 0) break;
      this.markup(input.slice(lt, end));
      at = end;
    }
    this.pending = input.slice(at);
    if (this.pending.length > MAX_MARKUP) throw new AnswerError(`a tag longer than ${MAX_MARKUP} characters`);
    this.searched = this.pending.length;
  }

  /** Where the markup at `lt` ends (past its terminator), or -1 while it is incomplete; `searched`: chars already looked at. */
  private markupEnd(input: string, lt: number, searched: number): number {
    let terminator = '>';
    if (input.startsWith('<!--', lt)) terminator = '-->';
    else if (input.startsWith('<![CDATA[', lt)) terminator = ']]>';
    else if (input.startsWith('<?', lt)) terminator = '?>';
    else if (input.startsWith('<!', lt)) {
      if (input.length - lt < '<![CDATA['.length) return -1; // a comment or CDATA section may yet begin
      throw new AnswerError('a DOCTYPE or other declaration');
    }
    const from = Math.max(lt + 1, lt + searched - terminator.length + 1);
    const found = input.indexOf(terminator, from);
    return found < 0 ? -1 : found + terminator.length;
  }

  private markup(tag: string): void {
    if (tag.startsWith('<?') || tag.startsWith('<!--')) return;
    if (tag.startsWith('<![CDATA[')) return this.addText(tag.slice(9, -3).replaceAll('&', '&amp;'));
    const spelled = /^<\/?([^\s/>]+)/.exec(tag)?.[1];
    if (!spelled) throw new AnswerError('a tag with no name');
    const name = this.names.get(spelled) ?? (this.names.set(spelled, spelled), spelled);
    const top = this.open[this.open.length - 1];
    if (tag[1] === '/') {
      if (this.open.length === 1 || top.element.name !== name)
        throw new AnswerError('an end tag that ends no open element');
      top.element.text = unescapeXml(top.raw);
      this.open.pop();
      return;
    }
    if (++this.count > MAX_ELEMENTS) throw new AnswerError(`more than ${MAX_ELEMENTS} elements`);
    const element: XmlElement = { name, children: NONE, text: '' };
    if (top.element.children === NONE) top.element.children = [];
    top.element.children.push(element);
    top.raw = ''; // the text around an element's children is not read
    if (tag.endsWith('/>')) return;
    if (this.open.length > MAX_DEPTH) throw new AnswerError(`elements nested more than ${MAX_DEPTH} deep`);
    this.open.push({ element, raw: '' });
  }

  private addText(raw: string): void {
    const top = this.open[this.open.length - 1];
    if (this.open.length === 1 || top.element.children !== NONE) return; // around the document, or around children
    top.raw += raw;
    if (top.raw.length > MAX_TEXT) throw new AnswerError(`a text longer than ${MAX_TEXT} characters`);
  }
}

/** Every element named `name` within `node` (not looking inside one found: listings nest none in another), in order. */
export function elements(node: XmlElement, name: string): XmlElement[] {
  const found: XmlElement[] = [];
  const stack = [...node.children].reverse();
  while (stack.length > 0) {
    const element = stack.pop()!;
    if (element.name === name) found.push(element);
    else for (let i = element.children.length - 1; i >= 0; i -= 1) stack.push(element.children[i]);
  }
  return found;
}

/** The text of the first element named `name` within `node`. */
export function text(node: XmlElement, name: string): string | undefined {
  const stack = [...node.children].reverse();
  while (stack.length > 0) {
    const element = stack.pop()!;
    if (element.name === name) return element.text;
    for (let i = element.children.length - 1; i >= 0; i -= 1) stack.push(element.children[i]);
  }
  return undefined;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** An `&` that starts no entity (it matches with no group) is not XML; neither is a reference to no XML character. */
function unescapeXml(value: string): string {
  if (!value.includes('&')) return value;
  return value.replace(
    /&(?:#x0*([0-9a-f]{1,6})|#0*([0-9]{1,7})|(amp|lt|gt|quot|apos));|&/gi,
    (_, hex?: string, decimal?: string, entity?: string) => {
      if (entity) return ENTITIES[entity.toLowerCase()];
      if (hex === undefined && decimal === undefined)
        throw new AnswerError('an & that starts no entity or character reference');
      const code = hex === undefined ? Number(decimal) : parseInt(hex, 16);
      if (!isXmlChar(code)) throw new AnswerError('a character reference to no XML character');
      return String.fromCodePoint(code);
    },
  );
}

/** XML 1.0's Char production. */
function isXmlChar(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}
