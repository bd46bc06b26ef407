package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSecretNames(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	if names, err := s.SecretNames(ctx); err != nil || len(names) != 0 {
		t.Fatalf("names of a new database: %v, %v", names, err)
	}
	for _, n := range []string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "ÜNÏ_KEY"} {
		if err := s.AddSecretName(ctx, n); err != nil {
			t.Fatalf("AddSecretName(%q): %v", n, err)
		}
	}
	if names, _ := s.SecretNames(ctx); strings.Join(names, ",") != "ANTHROPIC_API_KEY,GITHUB_TOKEN,ÜNÏ_KEY" {
		t.Errorf("names %v: want each once, sorted", names)
	}
	if err := s.RemoveSecretName(ctx, "GITHUB_TOKEN"); err != nil {
		t.Fatal(err)
	}
	if names, _ := s.SecretNames(ctx); strings.Join(names, ",") != "ANTHROPIC_API_KEY,ÜNÏ_KEY" {
		t.Errorf("after removing GITHUB_TOKEN: %v", names)
	}
	if err := s.RemoveSecretName(ctx, "GITHUB_TOKEN"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "sandbar secrets ls") {
		t.Errorf("remove a missing name: %v", err)
	}
	for _, bad := range []string{"", "  "} {
		if err := s.AddSecretName(ctx, bad); err == nil {
			t.Errorf("AddSecretName(%q) recorded it", bad)
		}
	}
}

func TestSettings(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	if v, ok, err := s.Setting(ctx, "default_agent"); err != nil || ok || v != "" {
		t.Errorf("unset setting: %q, %v, %v", v, ok, err)
	}
	if all, err := s.Settings(ctx); err != nil || len(all) != 0 {
		t.Errorf("settings of a new database: %v, %v", all, err)
	}
	for _, v := range []string{"claude", "custom: my agent ü"} {
		if err := s.SetSetting(ctx, "default_agent", v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSetting(ctx, "empty", ""); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Setting(ctx, "default_agent"); err != nil || !ok || v != "custom: my agent ü" {
		t.Errorf("setting after two sets: %q, %v, %v", v, ok, err)
	}
	if v, ok, err := s.Setting(ctx, "empty"); err != nil || !ok || v != "" {
		t.Errorf("a setting set to empty: %q, %v, %v; want set", v, ok, err)
	}
	if all, err := s.Settings(ctx); err != nil || fmt.Sprint(all) != "map[default_agent:custom: my agent ü empty:]" {
		t.Errorf("Settings = %v, %v", all, err)
	}
	if err := s.SetSetting(ctx, "", "x"); err == nil {
		t.Error("a setting without a name was set")
	}

	// log_window is the store's own: only a number of lines is taken.
	for _, bad := range []string{"lots", "0", "-5", "1.5", ""} {
		err := s.SetSetting(ctx, SettingLogWindow, bad)
		if err == nil || !strings.Contains(err.Error(), "whole number above 0") {
			t.Errorf("log_window %q: %v", bad, err)
		}
	}
	if _, ok, _ := s.Setting(ctx, SettingLogWindow); ok {
		t.Error("a refused log_window was stored")
	}
	if err := s.SetSetting(ctx, SettingLogWindow, "2000"); err != nil {
		t.Errorf("log_window 2000: %v", err)
	}
}
