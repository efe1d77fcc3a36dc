// An action button that asks first: it opens a dialog (Mantine's Modal: focus trapped, Escape
// closes, focus returns to the button) whose Confirm button runs the action. Errors stay in the
// dialog as an alert, with the per-field messages, so the user can correct a form and retry.
import { Button, Group, Modal, Stack, Text, type ButtonProps } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import { ProblemAlert } from './ProblemAlert';

export interface ConfirmActionProps {
  label: string;
  title: string;
  description?: ReactNode;
  /** Extra form fields shown in the dialog (backfill range, rejection reason). */
  children?: ReactNode;
  confirmLabel?: string;
  disabled?: boolean;
  color?: ButtonProps['color'];
  variant?: ButtonProps['variant'];
  onConfirm: () => Promise<unknown>;
  onDone?: () => void;
}

export function ConfirmAction({
  label,
  title,
  description,
  children,
  confirmLabel = 'Confirm',
  disabled,
  color,
  variant = 'default',
  onConfirm,
  onDone,
}: ConfirmActionProps) {
  const [opened, setOpened] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const close = () => {
    if (busy) return;
    setOpened(false);
    setError(null);
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      setOpened(false);
      onDone?.();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <Button variant={variant} color={color} disabled={disabled} onClick={() => setOpened(true)}>
        {label}
      </Button>
      {/* Composed so the header is a <div>: Modal's default <header> reads as a second banner
          landmark; and no corner X, since "Close" says the same with one Tab stop fewer. */}
      <Modal.Root opened={opened} onClose={close} centered>
        <Modal.Overlay />
        <Modal.Content>
          <Modal.Header component="div">
            <Modal.Title fw={600}>{title}</Modal.Title>
          </Modal.Header>
          <Modal.Body>
            <form onSubmit={(e) => void submit(e)}>
              <Stack gap="sm">
                {description &&
                  (typeof description === 'string' ? (
                    <Text size="sm">{description}</Text>
                  ) : (
                    description
                  ))}
                {children}
                <ProblemAlert error={error} />
                <Group justify="flex-end" gap="sm">
                  {/* named "Close", not "Cancel": the action itself may be "Cancel pipeline" */}
                  <Button
                    variant="default"
                    onClick={close}
                    disabled={busy}
                    data-autofocus={children ? undefined : true}
                  >
                    Close
                  </Button>
                  <Button type="submit" color={color} loading={busy}>
                    {confirmLabel}
                  </Button>
                </Group>
              </Stack>
            </form>
          </Modal.Body>
        </Modal.Content>
      </Modal.Root>
    </>
  );
}
