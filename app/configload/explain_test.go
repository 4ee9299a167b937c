package configload

import (
	"testing"

	"github.com/ripcord/ripcord/repoconfig"
)

// Explain names the organisation's repository when the file read was its,
// says how many more problems there are, and is empty for a valid config.
func TestExplain(t *testing.T) {
	org := Source{Repository: "acme/.github", Path: repoconfig.Path, Fallback: true}
	for _, c := range []struct {
		name string
		res  Result
		want string
	}{
		{"valid", Result{Found: true, Config: &repoconfig.Config{}}, ""},
		{"the organisation's file, with three problems", Result{Found: true, Source: org, Problems: []repoconfig.Problem{
			{Path: "apps.checkout.environments", Line: 4, Message: "is required"}, {Line: 9, Message: "b"}, {Line: 12, Message: "c"}}},
			".github/ripcord.yml of acme/.github (the organisation's config, which acme/checkout uses as it has none) is not valid at line 4, " +
				"apps.checkout.environments: is required (and 2 more problems): fix it (`ripcord validate` lists every problem), then try again"},
		{"a commit's file that does not parse", Result{Found: true, Source: Source{Repository: "acme/checkout", Path: repoconfig.Path, Ref: "feature"},
			Problems: []repoconfig.Problem{{Line: 2, Message: "invalid YAML: did not find expected key"}}},
			".github/ripcord.yml of acme/checkout at feature is not valid YAML at line 2 (did not find expected key): fix it, then try again"},
	} {
		if got := c.res.Explain("acme/checkout"); got != c.want {
			t.Errorf("%s: Explain =\n%q\nwant\n%q", c.name, got, c.want)
		}
	}
}
