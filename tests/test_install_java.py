"""The Java SDK as a user installs it: `./quiver package java` puts dev.quiver:quiver-java into the Maven
repository dist/java/repository; a Maven project outside the tree depends on it by coordinates, builds
the README's worker word for word, and DuckDB (with quiver's extension) attaches and calls it.

The project's build is offline: third-party artefacts come from ~/.m2 (read as a file repository, so
the user's local repository is left as it was) into a local repository of the test's own.
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest

import quiver

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = ROOT / "dist" / "java" / "repository"
ARTEFACT = REPOSITORY / "dev" / "quiver" / "quiver-java" / "0.1.0"
M2 = Path.home() / ".m2" / "repository"
# The plugin versions the tree's Java build pins (so ~/.m2 has them).
POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>shout</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository><id>quiver</id><url>{repository}</url></repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>dev.quiver</groupId>
      <artifactId>quiver-java</artifactId>
      <version>0.1.0</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
      </plugin>
    </plugins>
  </build>
</project>
"""
SETTINGS = """<settings>
  <mirrors>
    <mirror><id>user-m2</id><mirrorOf>*,!quiver</mirrorOf><url>{m2}</url></mirror>
  </mirrors>
</settings>
"""


def readme_worker() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- java-worker-example -->\n```java\n(.*?)```", text, re.DOTALL)
    assert match, "README.md has no <!-- java-worker-example --> block"
    return match.group(1)


@pytest.fixture(scope="module")
def packaged() -> Path:
    subprocess.run([str(ROOT / "tools" / "package.sh"), "java"], check=True, timeout=300)
    return ARTEFACT


def test_the_artefact_is_the_sdk_alone(packaged: Path) -> None:
    assert sorted(path.name for path in packaged.iterdir()) == [
        "quiver-java-0.1.0-sources.jar",
        "quiver-java-0.1.0.jar",
        "quiver-java-0.1.0.pom",
    ]
    with zipfile.ZipFile(packaged / "quiver-java-0.1.0.jar") as jar:
        names = jar.namelist()
        assert "Multi-Release: true" in jar.read("META-INF/MANIFEST.MF").decode()
    assert "dev/quiver/vgi/Worker.class" in names
    assert "dev/quiver/rpc/Server.class" in names
    assert not [name for name in names if name.startswith(("dev/quiver/conformance/", "dev/quiver/vgi/examples/"))]


def test_a_maven_project_builds_the_readme_worker_and_duckdb_calls_it(
    packaged: Path, extension: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "shout"
    (project / "src" / "main" / "java").mkdir(parents=True)
    (project / "pom.xml").write_text(POM.format(repository=REPOSITORY.as_uri()))
    (project / "src" / "main" / "java" / "ShoutWorker.java").write_text(readme_worker())
    settings = tmp_path / "settings.xml"
    settings.write_text(SETTINGS.format(m2=M2.as_uri()))
    build = subprocess.run(
        [
            "mvn",
            "-B",
            "-q",
            "-o",
            "-Daether.offline.protocols=file",
            "-Dstyle.color=never",
            f"--settings={settings}",
            f"-Dmaven.repo.local={tmp_path / 'm2'}",
            "compile",
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath",
            "-Dmdep.outputFile=classpath.txt",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    classpath = (project / "classpath.txt").read_text().strip()
    assert "quiver-java-0.1.0.jar" in classpath and "arrow-vector" in classpath, classpath
    launcher = project / "shout-worker"
    launcher.write_text(
        "#!/bin/sh\n"
        "exec java --add-opens=java.base/java.nio=ALL-UNNAMED "
        f'-cp "{project / "target" / "classes"}:{classpath}" ShoutWorker "$@"\n'
    )
    launcher.chmod(0o755)

    monkeypatch.setenv("QUIVER_EXTENSION", str(extension))
    con = quiver.connect(workers={"w": str(launcher)})
    try:
        assert con.execute("SELECT w.shout('héllo'), w.shout(NULL)").fetchone() == ("HÉLLO", None)
    finally:
        con.close()
