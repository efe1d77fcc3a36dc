// A single pass over the raw bytes of a request body, before JSON.parse sees them (decision 0080).
// Parsing builds every value of the document; this pass builds nothing, so a hostile body costs its
// own bytes and no more until it is known to be JSON we would accept. It refuses what PostgreSQL
// cannot store (U+0000, a lone UTF-16 surrogate: text and jsonb hold UTF-8 only) and nesting past
// MAX_JSON_DEPTH (decision 0010), and can find one top-level member without parsing the rest.

/** Nesting deeper than this is refused (decision 0010): free-form members stay JSON we can store. */
export const MAX_JSON_DEPTH = 64;

export interface JsonProblem {
  /** JSON Pointer of the offending value; for a member name, of the object that holds it. */
  field: string;
  message: string;
}

/** Problems a scan reports at most: enough to fix a body, too few to cost anything. */
export const MAX_JSON_PROBLEMS = 100;

export interface JsonScan {
  /**
   * Malformed JSON (one problem at `""`), else the unstorable and too deeply nested values in
   * document order (at most MAX_JSON_PROBLEMS); empty when the body is fine.
   */
  problems: JsonProblem[];
  /** Byte range of the top-level member asked for (the last one, as JSON.parse keeps the last). */
  member: { start: number; end: number } | null;
}

const MALFORMED: JsonProblem = { field: '', message: 'must be valid JSON' };
const NUL = 'must not contain the NUL character (U+0000)';
const SURROGATE = 'must not contain a lone surrogate (an unpaired \\uD800-\\uDFFF escape)';
const TOO_DEEP = `must not nest deeper than ${MAX_JSON_DEPTH} levels`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

class Malformed extends Error {}

function hexValue(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** True when the body is empty or only JSON whitespace. */
export function isBlank(bytes: Uint8Array): boolean {
  for (const c of bytes) if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  return true;
}

/**
 * Checks `bytes` against the JSON grammar (RFC 8259, what JSON.parse accepts), finds unstorable
 * strings and deep nesting, and locates the top-level member `member` of an object body. Allocates
 * a fixed amount whatever the body holds; the pointer of a problem is built only once one is found.
 */
export function scanJson(bytes: Uint8Array, member?: string): JsonScan {
  return new Scanner(bytes, member).run();
}

class Scanner {
  private i = 0;
  private depth = 0;
  /** Whether each open container is an object; grows by doubling, one byte per level. */
  private objects = new Uint8Array(MAX_JSON_DEPTH + 1);
  // The child each open container is at, for the first MAX_JSON_DEPTH levels: the array index,
  // or the byte range of the member name (quotes included).
  private readonly index = new Float64Array(MAX_JSON_DEPTH);
  private readonly keyStart = new Float64Array(MAX_JSON_DEPTH);
  private readonly keyEnd = new Float64Array(MAX_JSON_DEPTH);
  private readonly problems: JsonProblem[] = [];
  private readonly wanted: Uint8Array | null;
  private readonly wantedName: string | undefined;
  private memberPending = false;
  private memberStart = -1;
  private member: { start: number; end: number } | null = null;

  constructor(
    private readonly b: Uint8Array,
    wanted: string | undefined,
  ) {
    this.wantedName = wanted;
    this.wanted = wanted === undefined ? null : Buffer.from(wanted, 'utf8');
  }

  run(): JsonScan {
    try {
      this.document();
    } catch (err) {
      if (err instanceof Malformed) return { problems: [MALFORMED], member: null };
      throw err;
    }
    return { problems: this.problems, member: this.member };
  }

  private document(): void {
    const b = this.b;
    this.ws();
    // Each turn reads one value, then what follows it up to the start of the next value.
    for (;;) {
      if (this.memberPending && this.depth === 1) this.memberStart = this.i;
      const c = b[this.i];
      if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
        this.open(c === OPEN_OBJECT);
        this.i++;
        this.ws();
        const close = c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
        if (b[this.i] !== close) {
          if (c === OPEN_OBJECT) this.memberName();
          continue;
        }
        this.i++;
        this.depth--;
      } else if (c === QUOTE) {
        this.string(false);
      } else if (c === 0x2d || isDigit(c)) {
        this.number();
      } else if (c === 0x74) {
        this.literal('true');
      } else if (c === 0x66) {
        this.literal('false');
      } else if (c === 0x6e) {
        this.literal('null');
      } else {
        throw new Malformed();
      }
      if (!this.afterValue()) return;
    }
  }

  /** After a value: closes finished containers; false when the document is complete. */
  private afterValue(): boolean {
    const b = this.b;
    for (;;) {
      if (this.depth === 1 && this.memberPending) {
        this.member = { start: this.memberStart, end: this.i };
        this.memberPending = false;
      }
      this.ws();
      if (this.depth === 0) {
        if (this.i !== b.length) throw new Malformed();
        return false;
      }
      const inObject = this.objects[this.depth - 1] === 1;
      const c = b[this.i];
      if (c === COMMA) {
        this.i++;
        this.ws();
        if (inObject) this.memberName();
        else if (this.depth <= MAX_JSON_DEPTH) this.index[this.depth - 1]! += 1;
        return true;
      }
      if (c !== (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) throw new Malformed();
      this.i++;
      this.depth--;
    }
  }

  private open(isObject: boolean): void {
    if (this.depth >= MAX_JSON_DEPTH) this.report(this.depth, TOO_DEEP);
    if (this.depth === this.objects.length) {
      const grown = new Uint8Array(this.objects.length * 2);
      grown.set(this.objects);
      this.objects = grown;
    }
    this.objects[this.depth] = isObject ? 1 : 0;
    if (this.depth < MAX_JSON_DEPTH) this.index[this.depth] = 0;
    this.depth++;
  }

  /** A member name and its colon; leaves `i` at the member's value. */
  private memberName(): void {
    const start = this.i;
    if (this.b[start] !== QUOTE) throw new Malformed();
    const escaped = this.string(true);
    const level = this.depth - 1;
    if (level < MAX_JSON_DEPTH) {
      this.keyStart[level] = start;
      this.keyEnd[level] = this.i;
    }
    if (level === 0 && this.wanted !== null) this.memberPending = this.isWanted(start, escaped);
    this.ws();
    if (this.b[this.i] !== COLON) throw new Malformed();
    this.i++;
    this.ws();
  }

  private isWanted(start: number, escaped: boolean): boolean {
    const wanted = this.wanted!;
    if (escaped) return (JSON.parse(this.text(start, this.i)) as string) === this.wantedName;
    if (this.i - start - 2 !== wanted.length) return false;
    for (let k = 0; k < wanted.length; k++) if (this.b[start + 1 + k] !== wanted[k]) return false;
    return true;
  }

  /** A string from its opening quote; returns whether it held an escape. */
  private string(isName: boolean): boolean {
    const b = this.b;
    let i = this.i + 1;
    let escaped = false;
    for (;;) {
      const c = b[i];
      if (c === undefined || c < 0x20) throw new Malformed();
      if (c === QUOTE) break;
      if (c !== BACKSLASH) {
        i++;
        continue;
      }
      escaped = true;
      const e = b[i + 1];
      if (e !== 0x75) {
        // \" \\ \/ \b \f \n \r \t
        if (
          e !== QUOTE &&
          e !== BACKSLASH &&
          e !== 0x2f &&
          e !== 0x62 &&
          e !== 0x66 &&
          e !== 0x6e &&
          e !== 0x72 &&
          e !== 0x74
        ) {
          throw new Malformed();
        }
        i += 2;
        continue;
      }
      const unit = this.hex4(i + 2);
      if (unit < 0) throw new Malformed();
      i += 6;
      if (unit === 0) this.reportString(isName, NUL);
      else if (unit >= 0xd800 && unit <= 0xdbff) {
        const low = b[i] === BACKSLASH && b[i + 1] === 0x75 ? this.hex4(i + 2) : -1;
        if (low >= 0xdc00 && low <= 0xdfff) i += 6;
        else this.reportString(isName, SURROGATE);
      } else if (unit >= 0xdc00 && unit <= 0xdfff) this.reportString(isName, SURROGATE);
    }
    this.i = i + 1;
    return escaped;
  }

  private hex4(at: number): number {
    let value = 0;
    for (let k = 0; k < 4; k++) {
      const h = hexValue(this.b[at + k]);
      if (h < 0) return -1;
      value = value * 16 + h;
    }
    return value;
  }

  private number(): void {
    const b = this.b;
    if (b[this.i] === 0x2d) this.i++;
    if (b[this.i] === 0x30) this.i++;
    else if (isDigit(b[this.i])) while (isDigit(b[this.i])) this.i++;
    else throw new Malformed();
    if (b[this.i] === 0x2e) {
      this.i++;
      if (!isDigit(b[this.i])) throw new Malformed();
      while (isDigit(b[this.i])) this.i++;
    }
    if (b[this.i] === 0x65 || b[this.i] === 0x45) {
      this.i++;
      if (b[this.i] === 0x2b || b[this.i] === 0x2d) this.i++;
      if (!isDigit(b[this.i])) throw new Malformed();
      while (isDigit(b[this.i])) this.i++;
    }
  }

  private literal(word: string): void {
    for (let k = 0; k < word.length; k++)
      if (this.b[this.i + k] !== word.charCodeAt(k)) throw new Malformed();
    this.i += word.length;
  }

  private ws(): void {
    const b = this.b;
    for (;;) {
      const c = b[this.i];
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.i++;
    }
  }

  /** A problem in a string value is at the value; in a member name, at the object holding it. */
  private reportString(isName: boolean, message: string): void {
    if (isName) this.report(this.depth - 1, `member names ${message}`);
    else this.report(this.depth, message);
  }

  /** Adds a problem at the pointer made of the first `levels` open containers' children. */
  private report(levels: number, message: string): void {
    // Past MAX_JSON_DEPTH the container that went too deep is reported already, and no pointer is kept.
    if (this.problems.length >= MAX_JSON_PROBLEMS || levels > MAX_JSON_DEPTH) return;
    let field = '';
    for (let level = 0; level < levels; level++) {
      field +=
        '/' +
        (this.objects[level] === 1
          ? escapeToken(JSON.parse(this.text(this.keyStart[level]!, this.keyEnd[level]!)) as string)
          : String(this.index[level]));
    }
    this.problems.push({ field, message });
  }

  private text(start: number, end: number): string {
    return Buffer.from(this.b.buffer, this.b.byteOffset + start, end - start).toString('utf8');
  }
}
