import { deploymentPath, Link } from '../app/router.tsx';

/** A new deployment's own key, shown this once: it reaches that deployment's predict and service URL only. */
export function OwnKey({ owner, deployment, apiKey }: { owner: string; deployment: string; apiKey: string }) {
  return (
    <section className="card" aria-labelledby="own-key-heading">
      <h2 id="own-key-heading">
        <Link href={deploymentPath(owner, deployment)}>{deployment}</Link> is being created
      </h2>
      <p>Its own API key, shown this once (it reaches this deployment's predict and service URL only):</p>
      <pre className="console-output" tabIndex={0} role="group" aria-label="The deployment's API key">
        {apiKey}
      </pre>
      <button type="button" onClick={() => void navigator.clipboard?.writeText(apiKey)}>
        Copy the key
      </button>
    </section>
  );
}
