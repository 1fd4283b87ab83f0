import { useState, type FormEvent } from 'react';
import { useMembers, useRemoveMember, useSetMemberRole, useWorkspaceKind, type MemberRole } from './queries.ts';

const ROLES: MemberRole[] = ['viewer', 'editor', 'admin'];

/**
 * The workspace's members and their roles (owners and admins): add a user by username, change a role, remove a
 * member. A personal workspace has its owner only and takes no members (the API answers 400): the page says so.
 */
export function MembersPage({ owner, role }: { owner: string; role: string }) {
  const kind = useWorkspaceKind();
  return (
    <>
      <h1>Members of {owner}</h1>
      {kind.error ? <p role="alert">{kind.error.message}</p> : null}
      {kind.data === undefined && !kind.error ? <p role="status">Loading the members…</p> : null}
      {kind.data === 'personal' ? (
        <p>
          {owner} is a personal workspace: only its owner works in it, so it has no members to manage. Members belong to
          team workspaces (the operator creates one with <code>vpctl workspaces create</code>); sign in to a team to
          manage its members.
        </p>
      ) : null}
      {kind.data === 'team' ? <TeamMembers owner={owner} role={role} /> : null}
    </>
  );
}

function TeamMembers({ owner, role }: { owner: string; role: string }) {
  const members = useMembers(owner);
  const setRole = useSetMemberRole(owner);
  const remove = useRemoveMember(owner);
  const [done, setDone] = useState('');
  // A new change clears the last one's message: a refusal is never shown beside an older success.
  const change = (username: string, next: MemberRole, verb: string) => {
    setDone('');
    remove.reset();
    setRole.mutate({ username, role: next }, { onSuccess: () => setDone(`${username} ${verb} ${next}.`) });
  };
  return (
    <>
      <p className="muted">You are this team's {role}. Keys issued for a member stop working when they are removed.</p>
      <AddMember pending={setRole.isPending} add={(username, next) => change(username, next, 'was added as')} />
      {setRole.error ? <p role="alert">{setRole.error.message}</p> : null}
      {remove.error ? <p role="alert">{remove.error.message}</p> : null}
      <p role="status">{done}</p>
      {members.error ? <p role="alert">{members.error.message}</p> : null}
      {members.data ? (
        <table className="models" aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Role</th>
              <th scope="col">Since</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {members.data.map((member) => (
              <MemberRow
                key={member.username}
                member={member}
                pending={setRole.isPending || remove.isPending}
                changeRole={(next) => change(member.username, next, 'is now')}
                remove={() => {
                  if (!confirm(`Remove ${member.username} from ${owner}? The keys issued for them stop working.`))
                    return;
                  setDone('');
                  setRole.reset();
                  remove.mutate(member.username, { onSuccess: () => setDone(`${member.username} was removed.`) });
                }}
              />
            ))}
          </tbody>
        </table>
      ) : members.error ? null : (
        <p role="status">Loading the members…</p>
      )}
    </>
  );
}

function AddMember({ pending, add }: { pending: boolean; add: (username: string, role: MemberRole) => void }) {
  const [username, setUsername] = useState('');
  const [role, setRole] = useState<MemberRole>('viewer');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add(username.trim(), role);
    setUsername('');
  };
  return (
    <section className="card">
      <form className="toolbar" onSubmit={submit} aria-label="Add a member">
        <label htmlFor="member-username">Username</label>
        <input
          id="member-username"
          required
          autoComplete="off"
          maxLength={32}
          value={username}
          onChange={(event) => setUsername(event.target.value)}
        />
        <label htmlFor="member-role">Role</label>
        <select id="member-role" value={role} onChange={(event) => setRole(event.target.value as MemberRole)}>
          {ROLES.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
        <button type="submit" disabled={pending}>
          Add member
        </button>
      </form>
    </section>
  );
}

type Member = NonNullable<ReturnType<typeof useMembers>['data']>[number];

/** One member: the owner's row is read-only (the owner never changes here); others pick a role and save it. */
function MemberRow({
  member,
  pending,
  changeRole,
  remove,
}: {
  member: Member;
  pending: boolean;
  changeRole: (role: MemberRole) => void;
  remove: () => void;
}) {
  const [role, setRole] = useState<string>(member.role);
  const isOwner = member.role === 'owner';
  return (
    <tr>
      <th scope="row">
        {member.username}
        {member.name !== member.username ? <span className="muted"> ({member.name})</span> : null}
      </th>
      <td>
        {isOwner ? (
          'owner'
        ) : (
          <select
            aria-label={`Role of ${member.username}`}
            value={role}
            onChange={(event) => setRole(event.target.value as MemberRole)}
          >
            {ROLES.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        )}
      </td>
      <td>{new Date(member.since).toLocaleDateString()}</td>
      <td>
        {isOwner ? (
          <span className="muted">the owner stays</span>
        ) : (
          <>
            <button
              type="button"
              aria-label={`Save the role of ${member.username}`}
              disabled={pending || role === member.role}
              onClick={() => changeRole(role as MemberRole)}
            >
              Save role
            </button>{' '}
            <button type="button" aria-label={`Remove ${member.username}`} disabled={pending} onClick={remove}>
              Remove
            </button>
          </>
        )}
      </td>
    </tr>
  );
}
