package mailbox

// CovenantOrigin marks a task sent through Covenant's dialect
// (daemon/covenant): the ed25519 public keys Covenant's AgentIds carried
// beside their display names, kept so that the dialect can give the task
// back to Covenant as it was sent, and an operator can see who signed for
// it. Only the dialect sets it; the native routes refuse it.
type CovenantOrigin struct {
	// SenderPubkey and RecipientPubkey are base58, as Covenant writes them.
	SenderPubkey    string `json:"sender_pubkey"`
	RecipientPubkey string `json:"recipient_pubkey"`
}

// Bounds of a Covenant public key in base58: 32 bytes are 32 to 44
// characters (each leading zero byte is one '1').
const (
	MinCovenantPubkeyChars = 32
	MaxCovenantPubkeyChars = 44
	covenantPubkeyBytes    = 32
)

// base58Alphabet is Bitcoin's, which Covenant's bs58 uses.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// ValidateCovenantPubkey checks a public key as Covenant's AgentId
// decodes it: base58 that decodes to exactly 32 bytes. field names it in
// the refusal.
func ValidateCovenantPubkey(field, v string) error {
	expect := "a base58 ed25519 public key (32 bytes: 32 to 44 characters of " + base58Alphabet + ")"
	if len(v) < MinCovenantPubkeyChars || len(v) > MaxCovenantPubkeyChars {
		if len(v) > 64 {
			return Invalidf(field, "got %d characters, expected %s", len(v), expect)
		}
		return Invalidf(field, "got %s (%d characters), expected %s", quote(v), len(v), expect)
	}
	n, ok := base58Len(v)
	if !ok {
		return Invalidf(field, "got %s, which is not base58, expected %s", quote(v), expect)
	}
	if n != covenantPubkeyBytes {
		return Invalidf(field, "got %s, which decodes to %d bytes, expected %s", quote(v), n, expect)
	}
	return nil
}

// base58Len decodes s (at most a few dozen characters) and returns how
// many bytes it holds, or false when a character is not base58.
func base58Len(s string) (int, bool) {
	var out []byte // big-endian, without the leading zeros
	zeros := 0
	for i := 0; i < len(s); i++ {
		d := indexByte(base58Alphabet, s[i])
		if d < 0 {
			return 0, false
		}
		if d == 0 && len(out) == 0 {
			zeros++
			continue
		}
		carry := d
		for j := len(out) - 1; j >= 0; j-- {
			carry += int(out[j]) * 58
			out[j] = byte(carry)
			carry >>= 8
		}
		for carry > 0 {
			out = append([]byte{byte(carry)}, out...)
			carry >>= 8
		}
	}
	return zeros + len(out), true
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// normalizeCovenant checks what the dialect put on a task.
func normalizeCovenant(o *CovenantOrigin) error {
	if err := ValidateCovenantPubkey("covenant.sender_pubkey", o.SenderPubkey); err != nil {
		return err
	}
	return ValidateCovenantPubkey("covenant.recipient_pubkey", o.RecipientPubkey)
}
