// The agent's log: one JSON object per line on stderr, so journald or Docker keep it and `jq` reads it, without
// pulling a logging library into a process that runs on every GPU host.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type Logger = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export function jsonLinesLogger(stream: NodeJS.WritableStream = process.stderr): Logger {
  return (level, msg, fields) => {
    stream.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
  };
}
