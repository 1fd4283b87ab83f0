import { useState, type KeyboardEvent, type ReactNode } from 'react';

export interface Tab {
  /** Also the address's fragment (`#charts`), so a tab can be linked to and survives a reload. */
  id: string;
  label: string;
  render: () => ReactNode;
}

/**
 * The WAI-ARIA tabs pattern: one tab in the Tab order (the selected one), arrow keys, Home and End move between tabs
 * and select them. A panel is rendered when its tab is first opened (its data loads then) and is only hidden when
 * another is chosen, so what it was doing (an upload, a drawn map) goes on.
 */
export function Tabs({ label, tabs }: { label: string; tabs: Tab[] }) {
  const [selectedId, setSelectedId] = useState(() => {
    const fragment = location.hash.slice(1);
    return tabs.some((tab) => tab.id === fragment) ? fragment : tabs[0]?.id;
  });
  const selected = tabs.find((tab) => tab.id === selectedId) ?? tabs[0];
  const [opened, setOpened] = useState<ReadonlySet<string>>(() => new Set(selected ? [selected.id] : []));
  const select = (tab: Tab, focus = false) => {
    setSelectedId(tab.id);
    setOpened((ids) => (ids.has(tab.id) ? ids : new Set([...ids, tab.id])));
    history.replaceState(history.state, '', tab === tabs[0] ? location.pathname : `#${tab.id}`);
    if (focus) document.getElementById(`tab-${tab.id}`)?.focus();
  };
  const onKeyDown = (event: KeyboardEvent) => {
    const index = tabs.findIndex((tab) => tab.id === selected?.id);
    const next = {
      ArrowRight: (index + 1) % tabs.length,
      ArrowLeft: (index - 1 + tabs.length) % tabs.length,
      Home: 0,
      End: tabs.length - 1,
    }[event.key];
    const tab = next === undefined ? undefined : tabs[next];
    if (!tab) return;
    event.preventDefault();
    select(tab, true);
  };
  if (!selected) return null;
  return (
    <>
      <div role="tablist" aria-label={label} className="tabs" onKeyDown={onKeyDown}>
        {tabs.map((tab) => (
          <button
            key={tab.id}
            id={`tab-${tab.id}`}
            type="button"
            role="tab"
            aria-selected={tab.id === selected.id}
            aria-controls={`panel-${tab.id}`}
            tabIndex={tab.id === selected.id ? 0 : -1}
            onClick={() => select(tab)}
          >
            {tab.label}
          </button>
        ))}
      </div>
      {tabs
        .filter((tab) => opened.has(tab.id))
        .map((tab) => (
          <div
            key={tab.id}
            role="tabpanel"
            id={`panel-${tab.id}`}
            aria-labelledby={`tab-${tab.id}`}
            hidden={tab.id !== selected.id}
          >
            {tab.render()}
          </div>
        ))}
    </>
  );
}
