import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client.ts';
import { forgetCredentials, rememberCsrfToken, rememberKey } from '../api/credentials.ts';
import { datasetsPath, useNavigation } from '../app/router.tsx';
import { useRefreshIdentity } from './identity.ts';

/** The providers the appliance offers; an appliance without the sign-in routes (404) offers API keys only. */
function useProviders() {
  return useQuery({
    queryKey: ['auth-providers'],
    queryFn: async () => {
      const answer = await api.GET('/api/auth/providers');
      if (answer.response.status === 404) return { password: false, oidc: null };
      return unwrap(answer);
    },
    staleTime: Infinity,
  });
}

export function SignInPage() {
  const providers = useProviders();
  return (
    <main className="signin" id="main">
      <h1>Sign in to the Vision Platform</h1>
      {providers.data?.password ? <PasswordForm /> : null}
      {providers.data?.oidc ? (
        <p>
          <a className="button" href={`/api/auth/oidc/start?returnTo=${encodeURIComponent('/')}`}>
            Sign in with {providers.data.oidc.name}
          </a>
        </p>
      ) : null}
      <KeyForm />
    </main>
  );
}

function PasswordForm() {
  const { navigate } = useNavigation();
  const refresh = useRefreshIdentity();
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const onSubmit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setMessage('');
    forgetCredentials();
    const answer = await api.POST('/api/auth/login', {
      body: {
        username: field(form, 'username'),
        password: field(form, 'password'),
        ...(field(form, 'workspace').trim() ? { workspace: field(form, 'workspace').trim() } : {}),
      },
    });
    setBusy(false);
    if (!answer.data) {
      const retry = answer.response.headers.get('retry-after');
      setMessage(
        answer.response.status === 429
          ? `Too many failed sign-ins; try again in ${retry ?? 'a few'} seconds.`
          : (answer.error?.error ?? `The appliance answered ${answer.response.status}.`),
      );
      return;
    }
    rememberCsrfToken(answer.data.session.csrfToken);
    await refresh();
    navigate(datasetsPath(answer.data.session.owner), { replace: true });
  };
  return (
    <form className="card" onSubmit={(event) => void onSubmit(event)} aria-labelledby="password-heading">
      <h2 id="password-heading">With your username and password</h2>
      <label htmlFor="signin-username">Username</label>
      <input id="signin-username" name="username" autoComplete="username" required />
      <label htmlFor="signin-password">Password</label>
      <input id="signin-password" name="password" type="password" autoComplete="current-password" required />
      <label htmlFor="signin-workspace">Team workspace (optional; default: your own)</label>
      <input id="signin-workspace" name="workspace" autoComplete="off" />
      <button type="submit" disabled={busy}>
        Sign in
      </button>
      <p role="alert" className="error">
        {message}
      </p>
    </form>
  );
}

/** A user with only an API key: the key stays in this tab (sessionStorage) and is sent as a bearer header. */
function KeyForm() {
  const { navigate } = useNavigation();
  const refresh = useRefreshIdentity();
  const [message, setMessage] = useState('');
  const onSubmit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const key = field(new FormData(event.currentTarget), 'key').trim();
    rememberKey(key);
    const answer = await api.GET('/api/account/summary');
    if (!answer.data) {
      forgetCredentials();
      setMessage(answer.error?.error ?? `The appliance answered ${answer.response.status}.`);
      return;
    }
    await refresh();
    navigate(datasetsPath(answer.data.username), { replace: true });
  };
  return (
    <form className="card" onSubmit={(event) => void onSubmit(event)} aria-labelledby="key-heading">
      <h2 id="key-heading">With an API key</h2>
      <label htmlFor="signin-key">API key (kept in this tab only)</label>
      <input id="signin-key" name="key" type="password" autoComplete="off" required />
      <button type="submit">Sign in with the key</button>
      <p role="alert" className="error">
        {message}
      </p>
    </form>
  );
}

function field(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value : '';
}
