import { useEffect } from 'react';
import { ApiError } from '../api/client.ts';
import { forgetCredentials } from '../api/credentials.ts';
import { ImageEditor } from '../annotate/ImageEditor.tsx';
import { SignInPage } from '../auth/SignInPage.tsx';
import { useIdentity, useSignOut, type Identity } from '../auth/identity.ts';
import { DatasetPage } from '../datasets/DatasetPage.tsx';
import { DatasetsPage } from '../datasets/DatasetsPage.tsx';
import { datasetsPath, Link, useNavigation } from './router.tsx';

/** The page for the address; a signed-out visitor of any page but /signin is sent to /signin. */
export function App() {
  const { route, navigate } = useNavigation();
  const identity = useIdentity();
  const signedOut = identity.data === null || (identity.error instanceof ApiError && identity.error.status === 401);
  useEffect(() => {
    if (identity.error instanceof ApiError && identity.error.status === 401) forgetCredentials();
    if (signedOut && route.page !== 'signin') navigate('/signin', { replace: true });
    if (identity.data && (route.page === 'home' || route.page === 'signin'))
      navigate(datasetsPath(identity.data.owner), { replace: true });
  }, [signedOut, identity.data, identity.error, route.page, navigate]);

  useEffect(() => {
    document.title = `${titleOf(route.page)} — Vision Platform`;
  }, [route.page]);

  if (route.page === 'signin') return <SignInPage />;
  if (identity.isPending || !identity.data) {
    return (
      <main id="main" aria-busy="true">
        <p role="status">{identity.error && !signedOut ? identity.error.message : 'Loading…'}</p>
      </main>
    );
  }
  return (
    <Shell identity={identity.data}>
      {route.page === 'datasets' ? <DatasetsPage owner={route.owner} /> : null}
      {route.page === 'dataset' ? <DatasetPage owner={route.owner} slug={route.slug} /> : null}
      {route.page === 'image' ? <ImageEditor owner={route.owner} slug={route.slug} imageId={route.imageId} /> : null}
      {route.page === 'not-found' ? (
        <>
          <h1>Page not found</h1>
          <p>
            Nothing lives at <code>{route.path}</code>.{' '}
            <Link href={datasetsPath(identity.data.owner)}>Your datasets</Link>
          </p>
        </>
      ) : null}
    </Shell>
  );
}

function titleOf(page: string): string {
  return (
    { home: 'Home', signin: 'Sign in', datasets: 'Datasets', dataset: 'Dataset', image: 'Image' }[page] ?? 'Not found'
  );
}

function Shell({ identity, children }: { identity: Identity; children: React.ReactNode }) {
  const signOut = useSignOut();
  const { navigate } = useNavigation();
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href={datasetsPath(identity.owner)} className="brand">
          <Logo /> Vision Platform
        </Link>
        <nav aria-label="Main">
          <Link href={datasetsPath(identity.owner)}>Datasets</Link>
          <a href="/api/docs">API reference</a>
        </nav>
        <span className="who">
          {identity.username} · {identity.owner} ({identity.role})
        </span>
        <button type="button" onClick={() => void signOut(identity).then(() => navigate('/signin', { replace: true }))}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

function Logo() {
  return (
    <svg width="20" height="20" viewBox="0 0 20 20" aria-hidden="true" focusable="false">
      <rect x="2" y="2" width="16" height="16" rx="3" fill="none" stroke="currentColor" strokeWidth="2" />
      <circle cx="10" cy="10" r="3" fill="currentColor" />
    </svg>
  );
}
