/** The inner XML of each `<name>` element (storage listings nest no element within one of the same name). */
export function elements(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`, 'g'))].map((match) => match[1]);
}

export function text(xml: string, name: string): string | undefined {
  const inner = elements(xml, name)[0];
  return inner === undefined ? undefined : unescapeXml(inner);
}

function unescapeXml(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, entity: string) => {
    if (entity[0] === '#') return String.fromCodePoint(entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : Number(entity.slice(1)));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[entity.toLowerCase()]!;
  });
}
