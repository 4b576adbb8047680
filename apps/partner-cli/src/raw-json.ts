/**
 * The exact source text of each element of one array inside a JSON document, e.g. every event of
 * a `GET /v1/events` response at ["data", "events"]. `lop listen` forwards these bytes: a webhook
 * body is the event object exactly as the stream returned it, and re-serialising parsed JSON
 * could change it (key order of integer-like keys, number spelling, escapes).
 *
 * A scanner, not a parser: it only finds where values start and end. The caller parses the whole
 * document with JSON.parse as well, so malformed input fails there.
 */
export function rawArrayElements(text: string, path: readonly string[]): string[] {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at offset ${i} of the response`);
  };
  const skipSpace = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  const expect = (char: string) => {
    skipSpace();
    if (text[i] !== char) fail(`expected ${char}`);
    i++;
  };
  const skipString = () => {
    i++; // the opening quote
    while (i < text.length) {
      const char = text[i];
      if (char === '\\') i += 2;
      else if (char === '"') return void i++;
      else i++;
    }
    fail('unterminated string');
  };
  const skipValue = () => {
    skipSpace();
    const first = text[i];
    if (first === '"') return skipString();
    if (first === '{' || first === '[') {
      let depth = 0;
      while (i < text.length) {
        const char = text[i];
        if (char === '"') {
          skipString();
          continue;
        }
        if (char === '{' || char === '[') depth++;
        else if (char === '}' || char === ']') {
          depth--;
          if (depth === 0) return void i++;
        }
        i++;
      }
      return fail('unterminated value');
    }
    const start = i;
    while (i < text.length && !',}] \n\r\t'.includes(text[i])) i++;
    if (i === start) fail('expected a value');
  };
  /** After a member or an element: true when another follows. */
  const another = (close: string) => {
    skipSpace();
    if (text[i] === ',') return (i++, true);
    if (text[i] === close) return (i++, false);
    return fail(`expected , or ${close}`);
  };

  const elements = (): string[] => {
    expect('[');
    skipSpace();
    const found: string[] = [];
    if (text[i] === ']') return found;
    do {
      skipSpace();
      const start = i;
      skipValue();
      found.push(text.slice(start, i));
    } while (another(']'));
    return found;
  };

  const descend = (depth: number): string[] => {
    if (depth === path.length) return elements();
    expect('{');
    skipSpace();
    if (text[i] !== '}') {
      do {
        skipSpace();
        if (text[i] !== '"') fail('expected a member name');
        const nameStart = i;
        skipString();
        const name = JSON.parse(text.slice(nameStart, i)) as string;
        expect(':');
        if (name === path[depth]) return descend(depth + 1);
        skipValue();
      } while (another('}'));
    }
    return fail(`no member "${path[depth]}"`);
  };

  return descend(0);
}
