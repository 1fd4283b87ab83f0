// The agent's own metrics for its host, in the Prometheus text format, on `metricsListen` (host:port) when set: off by
// default, and meant for 127.0.0.1 or a monitoring network (it serves figures, no secret, and takes no input).
import { createServer, type Server } from 'node:http';

export interface AgentFigures {
  connected: () => boolean;
  jobsRunning: () => number;
}

export class AgentMetrics {
  disconnects = 0;
  jobsRecovered = 0;
  uploadRetries = 0;
  private readonly started = Date.now() / 1000;
  private readonly version: string;
  private readonly figures: AgentFigures;

  constructor(version: string, figures: AgentFigures) {
    this.version = version;
    this.figures = figures;
  }

  /** The exposition text now. */
  text(): string {
    const lines: string[] = [];
    const add = (name: string, type: 'gauge' | 'counter', help: string, value: number, labels = '') => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name}${labels} ${value}`);
    };
    add(
      'vp_worker_build_info',
      'gauge',
      'The agent release (always 1)',
      1,
      `{version=${JSON.stringify(this.version)}}`,
    );
    add(
      'vp_worker_start_time_seconds',
      'gauge',
      'When this agent process started (Unix seconds): a restart moves it',
      this.started,
    );
    add(
      'vp_worker_connected',
      'gauge',
      'The agent is connected to the control plane and welcomed (1) or not (0)',
      this.figures.connected() ? 1 : 0,
    );
    add(
      'vp_worker_disconnects_total',
      'counter',
      'Connections to the control plane lost after a welcome',
      this.disconnects,
    );
    add(
      'vp_worker_jobs_running',
      'gauge',
      'Jobs (containers or processes) the agent follows now',
      this.figures.jobsRunning(),
    );
    add(
      'vp_worker_jobs_recovered_total',
      'counter',
      'Jobs adopted from an earlier agent process at start (agent restarts)',
      this.jobsRecovered,
    );
    add(
      'vp_worker_upload_retries_total',
      'counter',
      'Output uploads retried after a transient failure',
      this.uploadRetries,
    );
    return `${lines.join('\n')}\n`;
  }

  /** Serves GET /metrics on `listen` ("host:port"); resolves once listening. */
  serve(listen: string): Promise<Server> {
    const at = listen.lastIndexOf(':');
    const server = createServer((request, response) => {
      if (request.method !== 'GET' || request.url !== '/metrics') {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(this.text());
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(Number(listen.slice(at + 1)), listen.slice(0, at).replace(/^\[|\]$/g, ''), () => resolve(server));
    });
  }
}
