import { useState, type FormEvent } from 'react';
import { useIdentity } from '../auth/identity.ts';
import { useApiKeys, useCreateKey, useRevokeKey } from './queries.ts';

type CreatedKey = NonNullable<ReturnType<typeof useCreateKey>['data']>;

/**
 * The workspace's API keys (the owner only): prefix, name, created, last used. Signed in with a password or OIDC, the
 * owner creates a key (shown once, with a copy button) and revokes keys; a tab signed in with a pasted key lists them
 * only, since an API key can neither create nor revoke one.
 */
export function ApiKeysPage() {
  const identity = useIdentity().data;
  const keys = useApiKeys();
  const revoke = useRevokeKey();
  const manage = identity?.via === 'session';
  return (
    <>
      <h1>API keys{identity ? ` of ${identity.owner}` : ''}</h1>
      {manage ? (
        <CreateKey />
      ) : (
        <p className="card">
          Keys are created and revoked from a password or OIDC sign-in: this tab is signed in with an API key, and an
          API key can neither create nor revoke keys. Sign out and sign in with your password to manage them (the
          operator can also use <code>vpctl keys</code>).
        </p>
      )}
      {revoke.error ? <p role="alert">{revoke.error.message}</p> : null}
      {revoke.data ? <p role="status">Key {revoke.data.prefix}… was revoked: it no longer works.</p> : null}
      {keys.error ? <p role="alert">{keys.error.message}</p> : null}
      {keys.data && keys.data.length === 0 ? <p>No API keys yet.</p> : null}
      {keys.data && keys.data.length > 0 ? (
        <table className="models" aria-label="API keys">
          <thead>
            <tr>
              <th scope="col">Prefix</th>
              <th scope="col">Name</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              {manage ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {keys.data.map((key) => (
              <tr key={key.keyId}>
                <th scope="row">
                  <code>{key.prefix}…</code>
                </th>
                <td>{key.name}</td>
                <td>{new Date(key.createdAt).toLocaleString()}</td>
                <td>{key.lastUsedAt ? new Date(key.lastUsedAt).toLocaleString() : 'never'}</td>
                {manage ? (
                  <td>
                    <button
                      type="button"
                      aria-label={`Revoke ${key.name} (${key.prefix})`}
                      disabled={revoke.isPending}
                      onClick={() => {
                        if (confirm(`Revoke ${key.name} (${key.prefix}…)? Whatever uses it is refused from now on.`))
                          revoke.mutate(key.keyId);
                      }}
                    >
                      Revoke
                    </button>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {!keys.data && !keys.error ? <p role="status">Loading the keys…</p> : null}
    </>
  );
}

function CreateKey() {
  const create = useCreateKey();
  const [name, setName] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(name.trim(), { onSuccess: () => setName('') });
  };
  return (
    <>
      <section className="card">
        <form className="toolbar" onSubmit={submit} aria-label="Create an API key">
          <label htmlFor="key-name">New key's name</label>
          <input
            id="key-name"
            required
            maxLength={100}
            autoComplete="off"
            value={name}
            onChange={(event) => setName(event.target.value)}
          />
          <button type="submit" disabled={create.isPending}>
            Create key
          </button>
        </form>
      </section>
      {create.error ? <p role="alert">{create.error.message}</p> : null}
      {create.data ? <NewKey created={create.data} dismiss={() => create.reset()} /> : null}
    </>
  );
}

/** The new key, this once: the API keeps only its hash. */
function NewKey({ created, dismiss }: { created: CreatedKey; dismiss: () => void }) {
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      // No clipboard outside a secure context (plain http to a host name): the field is selected for copying by hand.
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(created.key);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('This browser refused to copy: select the key and copy it yourself.');
    }
  };
  return (
    <section className="card" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading">Key {created.name} created</h2>
      <p>
        <strong>Copy it now: it will not be shown again.</strong> The appliance keeps only its hash; a lost key is
        revoked and replaced.
      </p>
      <div className="toolbar">
        <label htmlFor="new-key">New key</label>
        <input id="new-key" readOnly size={46} value={created.key} onFocus={(event) => event.target.select()} />
        <button type="button" onClick={() => void copy()}>
          Copy the key
        </button>
        <button type="button" onClick={dismiss}>
          Done
        </button>
      </div>
      <p role="status">{copied}</p>
    </section>
  );
}
