package policy

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/jetflow/jetflow/engine/value"
)

// RunKey is the key of the deployment's run settings, beside the task
// rules: {"$run": {"retention": "72h"}}. No task name starts with '$'.
const RunKey = "$run"

// Run settings.
const (
	fieldRetention = "retention"
	fieldArchive   = "archive"
	// RetentionOff is the retention that keeps settled runs for ever.
	RetentionOff = "off"
	minRetention = time.Second
	maxRetention = 10 * 366 * 24 * time.Hour
)

// Retention is how long the deployment keeps its settled runs before
// retention removes them: nil when the policy leaves it to the
// dispatchers' default (--retention), 0 when it keeps them for ever.
func (p *Policy) Retention() *time.Duration {
	if p == nil || p.retention == nil {
		return nil
	}
	d := *p.retention
	return &d
}

// Archive says whether the deployment's runs removed by retention are
// archived first: nil when the policy leaves it to the dispatchers'
// default (--archive).
func (p *Policy) Archive() *bool {
	if p == nil || p.archive == nil {
		return nil
	}
	a := *p.archive
	return &a
}

// parseRun reads the "$run" entry.
func (p *Policy) parseRun(raw json.RawMessage, ptr string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := openObject(dec, ptr, `must be an object with "`+fieldRetention+`", "`+fieldArchive+`" or "`+fieldSearch+`"`); err != nil {
		return err
	}
	for dec.More() {
		field, err := nextKey(dec, ptr)
		if err != nil {
			return err
		}
		fptr := ptr + "/" + value.EncodePointerSegment(field)
		var v any
		if err := dec.Decode(&v); err != nil {
			return syntaxError(fptr, err)
		}
		if field == fieldArchive {
			a, ok := v.(bool)
			if !ok {
				return errAt(fptr, "must be true or false, not %s", describe(v))
			}
			if p.archive != nil {
				return errAt(fptr, "the field %q appears twice", field)
			}
			p.archive = &a
			continue
		}
		if field == fieldSearch {
			if p.search != nil {
				return errAt(fptr, "the field %q appears twice", field)
			}
			if p.search, err = parseSearch(v, fptr); err != nil {
				return err
			}
			continue
		}
		if field != fieldRetention {
			return errAt(fptr, "%q is not a run setting (settings: %s, %s, %s)", field, fieldRetention, fieldArchive, fieldSearch)
		}
		if p.retention != nil {
			return errAt(fptr, "the field %q appears twice", field)
		}
		var d time.Duration
		if v != RetentionOff {
			if d, err = duration(v, fptr, minRetention, maxRetention); err != nil {
				return errAt(fptr, "must be %q or a duration from %s to %s, not %s", RetentionOff, minRetention, maxRetention, describe(v))
			}
		}
		p.retention = &d
	}
	return nil
}

// runTree is the canonical form of the "$run" entry, nil when unset.
func (p *Policy) runTree() map[string]any {
	if p.retention == nil && p.archive == nil && p.search == nil {
		return nil
	}
	t := map[string]any{}
	switch {
	case p.retention == nil:
	case *p.retention == 0:
		t[fieldRetention] = RetentionOff
	default:
		t[fieldRetention] = p.retention.String()
	}
	if p.archive != nil {
		t[fieldArchive] = *p.archive
	}
	if p.search != nil {
		s := map[string]any{}
		for k, v := range p.search {
			s[k] = v
		}
		t[fieldSearch] = s
	}
	return t
}
