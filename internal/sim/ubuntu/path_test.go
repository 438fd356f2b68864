package ubuntu

import "testing"

func TestLoginPathFlavours(t *testing.T) {
	const ubuntuPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin\n"
	for _, tc := range []struct {
		flavour    LoginPath
		user, root string
	}{
		{UbuntuLoginPath, ubuntuPath, ubuntuPath},
		{DebianLoginPath, "/usr/local/bin:/usr/bin:/bin:/usr/games\n", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"},
	} {
		t.Run(string(tc.flavour), func(t *testing.T) {
			v := newVM(t, Options{LoginPath: tc.flavour})
			want(t, "user PATH", v.user(`echo "$PATH"`), tc.user, "", 0)
			want(t, "root PATH", v.root(`echo "$PATH"`), tc.root, "", 0)
			// sudo's secure_path has the sbin directories either way.
			want(t, "sudo PATH", v.user(`sudo sh -c 'echo "$PATH"'`), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n", "", 0)
		})
	}
}
