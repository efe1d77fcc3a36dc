import { Anchor, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { useTitle } from '../components/hooks';

export default function NotFoundPage() {
  useTitle('Not found');
  return (
    <Stack>
      <Title order={1}>Page not found</Title>
      <Text>
        There is no dashboard page here.{' '}
        <Anchor component={Link} to="/">
          Go to the start page
        </Anchor>
        .
      </Text>
    </Stack>
  );
}
