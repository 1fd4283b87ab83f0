import { useEffect, useRef } from 'react';
import { parseAnsi } from './ansi.ts';

/** The trainer's console output with its colours, kept scrolled to the end while it grows (unless scrolled up). */
export function ConsoleOutput({ lines }: { lines: string[] }) {
  const panel = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  useEffect(() => {
    const element = panel.current;
    if (element && following.current) element.scrollTop = element.scrollHeight;
  }, [lines]);
  return (
    <pre
      ref={panel}
      className="console-output"
      tabIndex={0}
      role="log"
      aria-label="Console output"
      onScroll={(event) => {
        const element = event.currentTarget;
        following.current = element.scrollTop + element.clientHeight >= element.scrollHeight - 4;
      }}
    >
      {lines.map((line, index) => (
        <div key={index}>
          {parseAnsi(line).map((run, part) => (
            <span key={part} style={{ color: run.color, fontWeight: run.bold ? 'bold' : undefined }}>
              {run.text}
            </span>
          ))}
        </div>
      ))}
    </pre>
  );
}
