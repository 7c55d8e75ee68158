package configs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"

	"github.com/BurntSushi/toml"
)

// Encode writes cfg as TOML that Load reads back to an equal Config: every key, sections in the
// order of Config, map keys sorted but a stage's weights, which follow the reward registry's
// order. It is the canonical form Hash digests and the config.toml a run directory keeps.
func Encode(w io.Writer, cfg *Config) error {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(cfg); err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if _, err := w.Write(orderWeights(b.Bytes())); err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	return nil
}

// Hash is the hex SHA-256 of cfg's canonical encoding (Encode). Two configs hash equal exactly
// when they encode equal; checkpoints record it to tell whether they were made by this config.
func (cfg *Config) Hash() string {
	var b bytes.Buffer
	if err := Encode(&b, cfg); err != nil {
		// Encoding a Config cannot fail: every field has a TOML type and the buffer never errs.
		panic(err)
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}

// Clone returns a deep copy of cfg: no slice or map is shared.
func (cfg *Config) Clone() *Config {
	out := new(Config)
	deepCopy(reflect.ValueOf(out).Elem(), reflect.ValueOf(cfg).Elem())
	return out
}

// deepCopy copies src into dst, allocating new slices and maps; nil stays nil.
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}
