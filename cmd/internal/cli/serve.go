package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovekit/trove/viewer"
)

func newServeCmd(a *app) *cobra.Command {
	var (
		addr    string
		noToken bool
		allow   []string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "A read-only local web viewer of the store's sessions, checkpoints and runs",
		Long: `A read-only local web viewer of the store's sessions, checkpoints and runs.

The first line serve prints is the URL to open: it carries a random token for
this run, which the viewer moves into a cookie. Requests without the token or
the cookie get 401, and requests naming any host but the address serve listens
on (or localhost, 127.0.0.1 and [::1] with its port) get 421, so a web page
that rebinds its DNS name to this machine reads nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Ctrl-C stops the server cleanly from its first moment, not
			// only after Main's signalDelay.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErr("serve --addr %s: %v", addr, err)
			}
			defer ln.Close()
			tcp := ln.Addr().(*net.TCPAddr)
			if noToken && !tcp.IP.IsLoopback() {
				return usageErr("serve: --no-token on %s would show the store to anyone who can reach it: keep the token or listen on loopback", tcp)
			}
			ts, err := a.troveStore(ctx)
			if err != nil {
				return err
			}
			token := ""
			if !noToken {
				if token, err = viewer.NewToken(); err != nil {
					return err
				}
			}
			g := viewer.Guard(viewer.New(ts, a.log), tcp, token, allow, viewer.InterfaceIPs())
			srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
			a.printf("%s\n", viewer.URL(tcp, token))
			fmt.Fprintf(a.stderr, "serving the store read-only on %s (Ctrl-C to stop)\n", tcp)
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8765", "address to listen on")
	cmd.Flags().BoolVar(&noToken, "no-token", false, "serve without a token (loopback addresses only)")
	cmd.Flags().StringArrayVar(&allow, "allow-host", nil, "also answer requests naming this host (a deliberate LAN name; repeatable)")
	return cmd
}
