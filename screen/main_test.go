package screen

import (
	"testing"

	"github.com/trl-project/trl/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
