package designs

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestVerifyDocNamesWhatEachNeeds: docs/verify.md's table of capabilities
// says, for each, the capability it needs, as the code does.
func TestVerifyDocNamesWhatEachNeeds(t *testing.T) {
	doc, err := os.ReadFile("../docs/verify.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range capabilities {
		want := "nothing"
		if k.needs != "" {
			want = "`" + k.needs + "`"
		}
		if row := fmt.Sprintf("| `%s` | %s | ", k.name, want); !strings.Contains(string(doc), row) {
			t.Errorf("docs/verify.md has no row starting %q", row)
		}
	}
}
