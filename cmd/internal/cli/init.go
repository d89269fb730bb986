package cli

import (
	"github.com/spf13/cobra"

	"github.com/trovekit/trove/backend/crypt"
)

func newInitCmd(a *app) *cobra.Command {
	var encrypt bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a store, encrypted with --encrypt",
		Long: "Create the store at --store. With --encrypt every object it will hold is encrypted under a\n" +
			"random master key wrapped by a passphrase ($" + envPassword + ", --password-file or a prompt);\n" +
			"`trove key` adds, changes and removes passphrases. docs/security.md has the format.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.rawStore(ctx)
			if err != nil {
				return err
			}
			if !encrypt {
				a.printf("store ready at %s\n", a.storeName())
				return nil
			}
			secret, ok, err := a.secret(a.passwordFile, envPassword, "new passphrase: ", false, true)
			if err != nil {
				return err
			}
			if !ok {
				return usageErr("init --encrypt needs a passphrase: $%s, --password-file or a terminal", envPassword)
			}
			if _, err := crypt.Init(ctx, st, secret); err != nil {
				return err
			}
			a.printf("encrypted store ready at %s; keep the passphrase: without it nothing can be read\n", a.storeName())
			return nil
		},
	}
	cmd.Flags().BoolVar(&encrypt, "encrypt", false, "encrypt everything the store will hold")
	return cmd
}
