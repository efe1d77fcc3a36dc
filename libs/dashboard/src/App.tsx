// The page frame: header with the navigation and Sign out, one <main> landmark, and the client
// routes (history API under /ui/). Without a key, only the sign-in form shows.
import { AppShell, Button, Group, Loader, Text, UnstyledButton } from '@mantine/core';
import { lazy, Suspense } from 'react';
import { NavLink, Route, Routes } from 'react-router';
import { useSession } from './api/context';
import { useUiConfig } from './api/queries';
import { SignIn } from './auth/SignIn';
import classes from './App.module.css';
import HandlersPage from './pages/HandlersPage';
import NotFoundPage from './pages/NotFoundPage';
import OverviewPage from './pages/OverviewPage';
import PipelinesPage from './pages/PipelinesPage';
import SchedulePage from './pages/SchedulePage';
import SchedulesPage from './pages/SchedulesPage';
import WebhooksPage from './pages/WebhooksPage';
import WorkersPage from './pages/WorkersPage';

// The list pages are in the main chunk: a lazily loaded route is revealed only after React's
// Suspense throttle (up to 300 ms, seen as an idle gap before the list's first request). The
// pipeline page keeps its own chunk, so React Flow loads only with it.
const PipelinePage = lazy(() => import('./pages/pipeline/PipelinePage'));

const NAV = [
  { to: '/', label: 'Overview', end: true },
  { to: '/pipelines', label: 'Pipelines', end: false },
  { to: '/schedules', label: 'Schedules', end: false },
  { to: '/handlers', label: 'Handlers', end: false },
  { to: '/workers', label: 'Workers', end: false },
  { to: '/webhooks', label: 'Webhooks', end: false },
];

function Header() {
  const { signedIn, signOut } = useSession();
  return (
    <Group h="100%" px="md" justify="space-between" wrap="nowrap">
      <Group gap="lg" wrap="nowrap">
        <Text fw={700} component="span">
          Pipeline orchestration
        </Text>
        {signedIn && (
          <nav aria-label="Main">
            <Group gap={4} component="ul" className={classes.navList}>
              {NAV.map((item) => (
                <li key={item.to}>
                  <UnstyledButton
                    component={NavLink}
                    to={item.to}
                    end={item.end}
                    className={classes.navLink}
                  >
                    {item.label}
                  </UnstyledButton>
                </li>
              ))}
            </Group>
          </nav>
        )}
      </Group>
      {signedIn && (
        <Button variant="default" size="xs" onClick={signOut}>
          Sign out
        </Button>
      )}
    </Group>
  );
}

function Footer() {
  const { version } = useUiConfig();
  return version ? (
    <Text size="xs" c="dimmed" ta="right" mt="xl" component="footer">
      Server {version}
    </Text>
  ) : null;
}

export function App() {
  const { signedIn } = useSession();
  return (
    <AppShell header={{ height: 56 }} padding="md">
      <AppShell.Header>
        <Header />
      </AppShell.Header>
      <AppShell.Main>
        {signedIn ? (
          <Suspense fallback={<Loader aria-label="Loading the page" />}>
            <Routes>
              <Route index element={<OverviewPage />} />
              <Route path="pipelines" element={<PipelinesPage />} />
              <Route path="pipelines/:id" element={<PipelinePage />} />
              <Route path="schedules" element={<SchedulesPage />} />
              <Route path="schedules/:name" element={<SchedulePage />} />
              <Route path="handlers" element={<HandlersPage />} />
              <Route path="webhooks" element={<WebhooksPage />} />
              <Route path="workers" element={<WorkersPage />} />
              <Route path="*" element={<NotFoundPage />} />
            </Routes>
            <Footer />
          </Suspense>
        ) : (
          <SignIn />
        )}
      </AppShell.Main>
    </AppShell>
  );
}
