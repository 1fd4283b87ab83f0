import { useEffect } from 'react';
import { ApiError } from '../api/client.ts';
import { forgetCredentials } from '../api/credentials.ts';
import { ImageEditor } from '../annotate/ImageEditor.tsx';
import { SignInPage } from '../auth/SignInPage.tsx';
import { useIdentity, useSignOut, type Identity } from '../auth/identity.ts';
import { DatasetPage } from '../datasets/DatasetPage.tsx';
import { DatasetsPage } from '../datasets/DatasetsPage.tsx';
import { CreditsPage } from '../credits/CreditsPage.tsx';
import { DeploymentPage } from '../deployments/DeploymentPage.tsx';
import { DeploymentsPage } from '../deployments/DeploymentsPage.tsx';
import { HealthPage } from '../health/HealthPage.tsx';
import { HostsPage } from '../hosts/HostsPage.tsx';
import { JobsPage } from '../jobs/JobsPage.tsx';
import { ApiKeysPage } from '../keys/ApiKeysPage.tsx';
import { MembersPage } from '../members/MembersPage.tsx';
import { TrashPage } from '../trash/TrashPage.tsx';
import { ModelPage } from '../models/ModelPage.tsx';
import { ProjectPage } from '../projects/ProjectPage.tsx';
import { ProjectsPage } from '../projects/ProjectsPage.tsx';
import { areaPath, datasetsPath, Link, useNavigation, type Route } from './router.tsx';

/** The page for the address; a signed-out visitor of any page but /signin is sent to /signin. */
export function App() {
  const { route, navigate } = useNavigation();
  const identity = useIdentity();
  const signedOut = identity.data === null || (identity.error instanceof ApiError && identity.error.status === 401);
  // A public project's pages are readable without signing in (the trainer's "View results at" link opens them).
  const readableSignedOut = route.page === 'project' || route.page === 'model';
  useEffect(() => {
    if (identity.error instanceof ApiError && identity.error.status === 401) forgetCredentials();
    if (signedOut && route.page !== 'signin' && !readableSignedOut) navigate('/signin', { replace: true });
    if (identity.data && (route.page === 'home' || route.page === 'signin'))
      navigate(datasetsPath(identity.data.owner), { replace: true });
  }, [signedOut, readableSignedOut, identity.data, identity.error, route.page, navigate]);

  useEffect(() => {
    document.title = `${titleOf(route.page)} — Vision Platform`;
  }, [route.page]);

  if (route.page === 'signin') return <SignInPage />;
  if (signedOut && readableSignedOut) return <SignedOutShell>{projectPages(route)}</SignedOutShell>;
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
      {route.page === 'projects' ? <ProjectsPage owner={route.owner} /> : null}
      {route.page === 'deployments' ? <DeploymentsPage owner={route.owner} /> : null}
      {route.page === 'deployment' ? <DeploymentPage owner={route.owner} deployment={route.deployment} /> : null}
      {operatorPage(route, identity.data)}
      {projectPages(route)}
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

/** Roles that see the operator's pages (the API refuses their calls to the others). */
const OPERATORS = new Set(['owner', 'admin']);

/**
 * The operator's pages, for owners and admins (API keys: the owner only, as the API has it); anyone else opening their
 * address is told so (the API refuses their calls as well).
 */
function operatorPage(route: Route, identity: Identity) {
  const pages: Partial<Record<Route['page'], () => React.ReactNode>> = {
    hosts: () => <HostsPage />,
    jobs: () => <JobsPage />,
    members: () => <MembersPage owner={identity.owner} role={identity.role} />,
    keys: () => <ApiKeysPage />,
    trash: () => <TrashPage />,
    credits: () => <CreditsPage />,
    health: () => <HealthPage />,
  };
  const page = pages[route.page];
  if (!page) return null;
  const allowed = route.page === 'keys' ? identity.role === 'owner' : OPERATORS.has(identity.role);
  if (!allowed)
    return (
      <>
        <h1>{titleOf(route.page)}</h1>
        <p role="alert">
          This page is for the workspace's {route.page === 'keys' ? 'owner' : 'owners and admins'}; you are{' '}
          {identity.role === 'admin' ? 'an' : 'a'} {identity.role}.
        </p>
      </>
    );
  return page();
}

/** A project's page or a model's, for whoever may read them. */
function projectPages(route: Route) {
  if (route.page === 'project') return <ProjectPage owner={route.owner} project={route.project} />;
  if (route.page === 'model') return <ModelPage owner={route.owner} project={route.project} model={route.model} />;
  return null;
}

function titleOf(page: string): string {
  return (
    {
      home: 'Home',
      signin: 'Sign in',
      datasets: 'Datasets',
      dataset: 'Dataset',
      image: 'Image',
      projects: 'Projects',
      deployments: 'Deployments',
      deployment: 'Deployment',
      hosts: 'Hosts',
      jobs: 'Jobs',
      members: 'Members',
      keys: 'API keys',
      trash: 'Trash',
      credits: 'Credits',
      health: 'Health',
      project: 'Project',
      model: 'Model',
    }[page] ?? 'Not found'
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
          <Link href={areaPath(identity.owner, 'projects')}>Projects</Link>
          <Link href={areaPath(identity.owner, 'deployments')}>Deployments</Link>
          {OPERATORS.has(identity.role) ? (
            <>
              <Link href={areaPath(identity.owner, 'hosts')}>Hosts</Link>
              <Link href={areaPath(identity.owner, 'jobs')}>Jobs</Link>
              <Link href={areaPath(identity.owner, 'members')}>Members</Link>
              {identity.role === 'owner' ? <Link href={areaPath(identity.owner, 'keys')}>API keys</Link> : null}
              <Link href={areaPath(identity.owner, 'trash')}>Trash</Link>
              <Link href={areaPath(identity.owner, 'credits')}>Credits</Link>
              <Link href={areaPath(identity.owner, 'health')}>Health</Link>
            </>
          ) : null}
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

/** The frame of a page read without signing in: a public project's, or a refusal with the way to sign in. */
function SignedOutShell({ children }: { children: React.ReactNode }) {
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">
          <Logo /> Vision Platform
        </span>
        <nav aria-label="Main">
          <Link href="/signin">Sign in</Link>
          <a href="/api/docs">API reference</a>
        </nav>
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
