package system

import "testing"

func TestParseOSRelease(t *testing.T) {
	r, err := ParseOSRelease([]byte(`# Ubuntu
PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
ID=ubuntu
ID_LIKE=debian
HOME_URL='https://www.ubuntu.com/'

`))
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != "ubuntu" || r.VersionID() != "22.04" || r.String() != "Ubuntu 22.04.4 LTS" || r["HOME_URL"] != "https://www.ubuntu.com/" {
		t.Errorf("parsed %v", r)
	}
	if _, err := ParseOSRelease([]byte("ID=ubuntu\nnonsense\n")); err == nil {
		t.Error("a line without = was accepted")
	}
}
