package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// AddSecretName records that a secret of this name is in the keyring. Only
// the name is ever stored here, never the value. Adding a name twice is
// not an error.
func (s *Store) AddSecretName(ctx context.Context, name string) error {
	if strings.TrimSpace(name) == "" {
		return errors.New("record a secret name: it is empty: give the name of the secret, like ANTHROPIC_API_KEY")
	}
	op := "record the secret name " + name
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO secret_names (name) VALUES (?) ON CONFLICT DO NOTHING", name); err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}

// SecretNames lists the recorded secret names, sorted.
func (s *Store) SecretNames(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name FROM secret_names ORDER BY name")
	if err != nil {
		return nil, s.fail("list secret names", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, s.fail("list secret names", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list secret names", err)
	}
	return out, nil
}

// RemoveSecretName forgets a secret name (the keyring is not touched); an
// unknown name is an error wrapping ErrNotFound.
func (s *Store) RemoveSecretName(ctx context.Context, name string) error {
	op := "forget the secret name " + name
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM secret_names WHERE name = ?", name)
		if err != nil {
			return s.fail(op, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errorf(ErrNotFound, "no secret named %s: `sandbar secrets ls` lists them", name)
		}
		return nil
	})
}

// Setting returns the value of a setting and whether it is set.
func (s *Store) Setting(ctx context.Context, key SettingKey) (string, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.fail("read the setting "+string(key), err)
	}
	return v, true, nil
}

// SetSetting sets a setting, replacing any value it had. The settings the
// store itself reads (SettingLogWindow) are checked first.
func (s *Store) SetSetting(ctx context.Context, key SettingKey, value string) error {
	if strings.TrimSpace(string(key)) == "" {
		return errors.New("change a setting: its name is empty")
	}
	if key == SettingLogWindow {
		if _, err := parseLogWindow(value); err != nil {
			return err
		}
	}
	op := "change the setting " + string(key)
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
		if err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}

// Settings returns every setting that is set.
func (s *Store) Settings(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT key, value FROM settings")
	if err != nil {
		return nil, s.fail("read the settings", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, s.fail("read the settings", err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read the settings", err)
	}
	return out, nil
}
