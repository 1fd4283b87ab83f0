import { useState, type FormEvent } from 'react';
import { useEnrollment, useDisconnect, useHosts } from './queries.ts';

type Enrollment = NonNullable<ReturnType<typeof useEnrollment>['data']>;

/**
 * The worker hosts (owners and admins): state, last heard, hardware, agent version (flagged when an upgrade is due),
 * the jobs each runs; connect a new one (the exact command to run on it), rotate a host's key, disconnect one.
 */
export function HostsPage() {
  const hosts = useHosts();
  const enrollment = useEnrollment();
  const disconnect = useDisconnect();
  const [name, setName] = useState('');
  const connect = (event: FormEvent) => {
    event.preventDefault();
    enrollment.mutate({ name, rotate: false }, { onSuccess: () => setName('') });
  };
  return (
    <>
      <h1>Worker hosts</h1>
      <section className="card">
        <form className="toolbar" onSubmit={connect} aria-label="Connect a host">
          <label htmlFor="host-name">New host's name</label>
          <input
            id="host-name"
            required
            maxLength={63}
            pattern="[a-z0-9]([a-z0-9\-]{0,61}[a-z0-9])?"
            value={name}
            onChange={(event) => setName(event.target.value)}
          />
          <button type="submit" disabled={enrollment.isPending}>
            Connect a host
          </button>
        </form>
      </section>
      {enrollment.error ? <p role="alert">{enrollment.error.message}</p> : null}
      {enrollment.data ? <EnrollCommand enrollment={enrollment.data} /> : null}
      {disconnect.error ? <p role="alert">{disconnect.error.message}</p> : null}
      {hosts.error ? <p role="alert">{hosts.error.message}</p> : null}
      {hosts.data ? (
        <table className="models" aria-label="Hosts">
          <thead>
            <tr>
              <th scope="col">Host</th>
              <th scope="col">State</th>
              <th scope="col">Last heard</th>
              <th scope="col">Hardware</th>
              <th scope="col">Load</th>
              <th scope="col">GPUs</th>
              <th scope="col">Agent</th>
              <th scope="col">Jobs running</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {hosts.data.map((host) => (
              <tr key={`${host.pool ? 'pool' : 'own'}-${host.name}`}>
                <th scope="row">
                  {host.name}
                  {host.pool ? <span className="muted"> (appliance pool)</span> : null}
                </th>
                <td>{host.state}</td>
                <td>{host.lastHeartbeatAt ? new Date(host.lastHeartbeatAt).toLocaleString() : 'never'}</td>
                <td>{host.hardware ?? '—'}</td>
                <td>
                  <HostLoad load={host.load} />
                </td>
                <td>
                  <HostGpus gpus={host.gpus} />
                </td>
                <td>
                  {host.agentVersion ?? '—'}
                  {host.agentOutdated ? <strong> — upgrade</strong> : null}
                </td>
                <td>{host.runningJobs.length}</td>
                <td>
                  {host.pool ? (
                    <span className="muted">managed with vpctl</span>
                  ) : (
                    <>
                      <button
                        type="button"
                        aria-label={`Rotate the key of ${host.name}`}
                        onClick={() => enrollment.mutate({ name: host.name, rotate: true })}
                      >
                        Rotate key
                      </button>{' '}
                      <button
                        type="button"
                        aria-label={`Disconnect ${host.name}`}
                        onClick={() => {
                          if (confirm(`Disconnect ${host.name}? Its jobs are lost to it; connect it again to use it.`))
                            disconnect.mutate(host.name);
                        }}
                      >
                        Disconnect
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p role="status">Loading the hosts…</p>
      )}
    </>
  );
}

type Host = NonNullable<ReturnType<typeof useHosts>['data']>[number];

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/** CPU and memory in use at the host's last heartbeat (none while it is not connected). */
function HostLoad({ load }: { load: Host['load'] }) {
  if (!load) return <span className="muted">—</span>;
  return (
    <span data-cpu={load.cpuPercent}>
      CPU {Math.round(load.cpuPercent)} %, memory {gib(load.memoryUsedBytes)}
      {load.memoryBytes ? ` of ${gib(load.memoryBytes)}` : ''}
    </span>
  );
}

/** Each GPU with its use and memory at the last heartbeat. */
function HostGpus({ gpus }: { gpus: Host['gpus'] }) {
  if (gpus.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="plain">
      {gpus.map((gpu) => (
        <li key={gpu.index}>
          GPU {gpu.index} {gpu.model}:{' '}
          {gpu.utilizationPercent === null ? 'use unknown' : `${Math.round(gpu.utilizationPercent)} %`},{' '}
          {gpu.memoryUsedMiB === null ? '?' : (gpu.memoryUsedMiB / 1024).toFixed(1)} of{' '}
          {(gpu.memoryMiB / 1024).toFixed(1)} GiB
          {gpu.utilizationPercent === null ? null : (
            <meter
              min={0}
              max={100}
              value={gpu.utilizationPercent}
              aria-label={`GPU ${gpu.index} use`}
              className="gpu-meter"
            />
          )}
        </li>
      ))}
    </ul>
  );
}

/** The one-time command, shown once: run it on the host before it expires. */
function EnrollCommand({ enrollment }: { enrollment: Enrollment }) {
  return (
    <section className="card" aria-labelledby="enroll-heading">
      <h2 id="enroll-heading">Enroll {enrollment.host}</h2>
      <p>
        Run this on the host before {new Date(enrollment.expiresAt).toLocaleTimeString()} (the token works once and is
        not shown again):
      </p>
      <pre className="console-output" tabIndex={0} role="group" aria-label="Enrollment command">
        {enrollment.command}
      </pre>
      <button type="button" onClick={() => void navigator.clipboard?.writeText(enrollment.command)}>
        Copy the command
      </button>
    </section>
  );
}
