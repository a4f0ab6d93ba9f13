// Package auth checks the credentials of client API calls against a file
// of bearer tokens and basic-auth users, each with the scopes it may use.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/yaml"
)

// Scope is a class of calls a credential may make.
type Scope string

// The scopes. A credential holds a list of them; none implies another.
const (
	ScopeRead   Scope = "read"   // queries and schema reads
	ScopeWrite  Scope = "write"  // stream and measure writes
	ScopeSchema Scope = "schema" // creating, updating and deleting groups, streams, measures
)

var knownScopes = []Scope{ScopeRead, ScopeWrite, ScopeSchema}

// File is the auth file's layout (YAML). Secrets are stored hashed only:
//
//	tokens:
//	  - name: ingest
//	    sha256: 9f86d0...   # hex SHA-256 of the token
//	    scopes: [write]
//	users:
//	  - name: alice
//	    password_hash: $2y$10$...  # bcrypt, or sha256:<hex>
//	    scopes: [read, schema]
type File struct {
	Tokens []TokenEntry `json:"tokens"`
	Users  []UserEntry  `json:"users"`
}

// TokenEntry is a bearer token.
type TokenEntry struct {
	Name   string  `json:"name"`
	SHA256 string  `json:"sha256"`
	Scopes []Scope `json:"scopes"`
}

// UserEntry is a basic-auth user.
type UserEntry struct {
	Name         string  `json:"name"`
	PasswordHash string  `json:"password_hash"`
	Scopes       []Scope `json:"scopes"`
}

// Identity is who a call's credentials belong to.
type Identity struct {
	Name   string
	Scopes []Scope
}

// Allows reports whether the identity holds scope.
func (id Identity) Allows(s Scope) bool { return slices.Contains(id.Scopes, s) }

// table is a parsed auth file. It is never modified after parse, except
// for the cache of bcrypt verifications, which has its own lock.
type table struct {
	tokens []token
	users  map[string]user

	mu       sync.Mutex
	verified map[[sha256.Size]byte]bool // sha256(user, password) of bcrypt successes
}

type token struct {
	id   Identity
	hash [sha256.Size]byte
}

type user struct {
	id     Identity
	bcrypt []byte            // bcrypt hash, or
	sha    [sha256.Size]byte // sha256 of the password
}

// maxVerified bounds the bcrypt cache; past it, every call pays bcrypt.
const maxVerified = 4096

// readFile reads and checks an auth file.
func readFile(path string) (*table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("auth file %s: %w", path, err)
	}
	return t, nil
}

func parse(data []byte) (*table, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	if len(f.Tokens)+len(f.Users) == 0 {
		return nil, errors.New("no tokens and no users: every call would be refused")
	}
	t := &table{users: map[string]user{}, verified: map[[sha256.Size]byte]bool{}}
	names := map[string]bool{}
	var errs []error
	checkEntry := func(kind string, i int, name string, scopes []Scope) bool {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("%s[%d]: name is required", kind, i))
		case names[name]:
			errs = append(errs, fmt.Errorf("%s[%d]: name %q used twice", kind, i, name))
		case len(scopes) == 0:
			errs = append(errs, fmt.Errorf("%s %q: no scopes (want some of %v)", kind, name, knownScopes))
		default:
			for _, s := range scopes {
				if !slices.Contains(knownScopes, s) {
					errs = append(errs, fmt.Errorf("%s %q: unknown scope %q (want some of %v)", kind, name, s, knownScopes))
					return false
				}
			}
			names[name] = true
			return true
		}
		return false
	}
	for i, e := range f.Tokens {
		if !checkEntry("tokens", i, e.Name, e.Scopes) {
			continue
		}
		h, err := hexSHA256(e.SHA256)
		if err != nil {
			errs = append(errs, fmt.Errorf("token %q: sha256: %w", e.Name, err))
			continue
		}
		t.tokens = append(t.tokens, token{id: Identity{Name: e.Name, Scopes: e.Scopes}, hash: h})
	}
	for i, e := range f.Users {
		if !checkEntry("users", i, e.Name, e.Scopes) {
			continue
		}
		u := user{id: Identity{Name: e.Name, Scopes: e.Scopes}}
		switch {
		case strings.HasPrefix(e.PasswordHash, "sha256:"):
			h, err := hexSHA256(strings.TrimPrefix(e.PasswordHash, "sha256:"))
			if err != nil {
				errs = append(errs, fmt.Errorf("user %q: password_hash: %w", e.Name, err))
				continue
			}
			u.sha = h
		case strings.HasPrefix(e.PasswordHash, "$2"):
			if _, err := bcrypt.Cost([]byte(e.PasswordHash)); err != nil {
				errs = append(errs, fmt.Errorf("user %q: password_hash: %w", e.Name, err))
				continue
			}
			u.bcrypt = []byte(e.PasswordHash)
		default:
			errs = append(errs, fmt.Errorf("user %q: password_hash must be a bcrypt hash ($2y$...) or sha256:<hex>", e.Name))
			continue
		}
		t.users[e.Name] = u
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

func hexSHA256(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != sha256.Size {
		return h, fmt.Errorf("want %d hex digits", 2*sha256.Size)
	}
	copy(h[:], b)
	return h, nil
}

// token finds the token's identity. Every entry is compared, in constant
// time, so the time taken does not tell which one matched.
func (t *table) token(secret string) (Identity, bool) {
	h := sha256.Sum256([]byte(secret))
	var found Identity
	ok := 0
	for _, e := range t.tokens {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, ok = e.id, 1
		}
	}
	return found, ok == 1
}

// user checks a basic-auth user and password.
func (t *table) user(name, password string) (Identity, bool) {
	u, ok := t.users[name]
	if !ok {
		return Identity{}, false
	}
	if u.bcrypt == nil {
		h := sha256.Sum256([]byte(password))
		return u.id, subtle.ConstantTimeCompare(h[:], u.sha[:]) == 1
	}
	// bcrypt is slow on purpose; remember successes so a client making
	// many calls pays it once per password.
	key := sha256.Sum256([]byte(name + "\x00" + password))
	t.mu.Lock()
	hit := t.verified[key]
	t.mu.Unlock()
	if hit {
		return u.id, true
	}
	if bcrypt.CompareHashAndPassword(u.bcrypt, []byte(password)) != nil {
		return Identity{}, false
	}
	t.mu.Lock()
	if len(t.verified) < maxVerified {
		t.verified[key] = true
	}
	t.mu.Unlock()
	return u.id, true
}
