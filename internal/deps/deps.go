// Package deps pins the project's third-party modules while the packages
// that use them are being written; it is removed once they all import them.
package deps

import (
	_ "github.com/docker/docker/api/types/container"
	_ "github.com/docker/docker/client"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/pmezard/go-difflib/difflib"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/hashicorp/hcl/v2/gohcl"
	_ "github.com/hashicorp/hcl/v2/hclsyntax"
	_ "github.com/hashicorp/hcl/v2/hclwrite"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/spf13/cobra"
	_ "github.com/zclconf/go-cty/cty"
	_ "github.com/zclconf/go-cty/cty/convert"
	_ "github.com/zclconf/go-cty/cty/function/stdlib"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
)
